/** XML text escaping for the GPX and KML writers (names are users' words: `<`, `&`, quotes). */

// XML 1.0 forbids these control characters even escaped: they are dropped.
const FORBIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' }

export function xmlText(text: string): string {
  return text.replace(FORBIDDEN, '').replace(/[&<>"']/g, (c) => ESCAPES[c])
}

/** A route row's point, or null when it has no usable coordinates. */
export interface RoutePoint {
  device: string
  name: string
  latitude: number
  longitude: number
  altitudeM: number | null
  timestamp: number | null
  satellites: number | null
}

const finite = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null)

export function routePoint(row: Readonly<Record<string, unknown>>): RoutePoint | null {
  const latitude = finite(row.latitude)
  const longitude = finite(row.longitude)
  if (latitude === null || longitude === null) return null
  const device = String(row.device ?? '')
  const alias = row.alias
  return {
    device,
    name: typeof alias === 'string' && alias !== '' ? alias : device,
    latitude,
    longitude,
    altitudeM: finite(row.altitude_m),
    timestamp: finite(row.timestamp),
    satellites: finite(row.satellites),
  }
}
