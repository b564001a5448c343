/**
 * A delivery in words, for people (email and Telegram channels): the vehicle, the event as the
 * console words it (the console's own strings, so both say "SOS", "Entered Yard", "Overspeed 112
 * km/h (limit 90)"), the time, the place ("City, CC" from the offline geocoder) and a link to the
 * device's page in the console. Pure: the place comes from the function it is given.
 */
import { eventName } from '../console/app/eventNames'
import { strings } from '../console/app/strings'

const finite = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value)

/** The event in words, as the console's notices and Events page word it. */
export const eventWords = (code: string, context?: Record<string, unknown> | null): string => eventName(code, context ?? undefined)

/** What a person is told. */
export interface Message {
  subject: string
  text: string
  html: string
}

export interface MessageContext {
  /** the account's name, in the subject */
  account: string
  /** APP_URL, without a trailing slash */
  appUrl: string
  /** "City, CC" of a point */
  place: (latitude: number, longitude: number) => string
}

/** The body a webhook would get (delivery.ts deliveryBody): an event, or a test. */
interface DeliveryJson {
  type?: string
  event?: {
    alarm_code?: string
    context?: Record<string, unknown> | null
    coordinates?: [number, number] | null
    timestamp?: number
    speed?: number | null
    device?: { id?: string; alias?: string }
  } | null
  notification?: { id?: string; name?: string } | null
  sent_at?: string
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

/** "2026-11-26 14:03:07 UTC": the accounts have no time zone of their own yet */
const utc = (ms: number) => `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`

function render(subject: string, lines: [label: string, value: string][], link: string | null): Message {
  const text = [subject, '', ...lines.map(([label, value]) => `${label}: ${value}`), ...(link ? ['', `Open in the console: ${link}`] : [])].join('\n')
  const rows = lines.map(([label, value]) => `<tr><th align="left" style="padding:2px 12px 2px 0">${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`).join('')
  const html =
    `<!doctype html><html><body style="font-family:sans-serif;color:#111">` +
    `<h2 style="margin:0 0 12px">${escapeHtml(subject)}</h2><table>${rows}</table>` +
    (link ? `<p><a href="${escapeHtml(link)}">Open in the console</a></p>` : '') +
    `</body></html>`
  return { subject, text, html }
}

/** A delivery's JSON body (what a webhook gets) as a message for people. */
export function messageOf(body: string, context: MessageContext): Message {
  const json = JSON.parse(body) as DeliveryJson
  if (json.type !== 'event' || !json.event) {
    const name = json.notification?.name ?? ''
    return render(`[${context.account}] Test notification: ${name}`, [['Channel', name], ['Sent', json.sent_at ? utc(Date.parse(json.sent_at)) : '']], context.appUrl)
  }
  const event = json.event
  const alias = event.device?.alias ?? strings.unknownDevice
  const words = eventWords(event.alarm_code ?? '', event.context)
  const coordinates = event.coordinates
  const place = coordinates && finite(coordinates[0]) && finite(coordinates[1]) ? context.place(coordinates[0], coordinates[1]) : null
  const lines: [string, string][] = [
    ['Vehicle', alias],
    ['Event', words],
    ['Time', finite(event.timestamp) ? utc(event.timestamp * 1000) : 'not reported'],
    ['Place', place && coordinates ? `${place} (${coordinates[0]}, ${coordinates[1]})` : 'not reported'],
  ]
  if (finite(event.speed)) lines.push(['Speed', `${Math.round(event.speed)} km/h`])
  const link = event.device?.id ? `${context.appUrl}/#/devices/${encodeURIComponent(event.device.id)}` : null
  return render(`[${context.account}] ${alias}: ${words}`, lines, link)
}
