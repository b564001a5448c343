/**
 * Share links as the console manages them: the calls (POST/GET/PATCH/DELETE /devices/share), the
 * fixed permission table, the expiry presets, the QR code of a short link and copying it. The
 * server lists only active links (GET /devices/share); links this page saw end (revoked here, or
 * expired while it was open) are remembered until the page is reloaded or the person signs out,
 * so that the list can show them as ended rather than let them silently vanish.
 */
import qrcode from 'qrcode-generator'
import { failure, getJson, request } from './api'
import type { ShareCreated, ShareLink } from './types'

/**
 * The server's fixed permission table (src/share/permissions.ts, seeded by the first migration;
 * the ids never change). test/console/share.test.ts holds the two equal.
 */
export const PERMISSIONS = [
  { name: 'location', id: 'a3c1f6d0-2b7e-4f5a-8c9d-000000000001' },
  { name: 'history', id: 'a3c1f6d0-2b7e-4f5a-8c9d-000000000002' },
  { name: 'events', id: 'a3c1f6d0-2b7e-4f5a-8c9d-000000000003' },
] as const
export type PermissionName = (typeof PERMISSIONS)[number]['name']

/** The API's bounds (src/share/model.ts): ttl 60 s to one year, 1 to 1,000 devices a link. */
export const MIN_TTL_S = 60
export const MAX_TTL_S = 31_536_000
export const MAX_DEVICES = 1000

export const HOUR_S = 3600
export const DAY_S = 86_400
/** The expiry choices, in seconds; `custom` takes a number and a unit. */
export const TTL_PRESETS_S = [HOUR_S, DAY_S, 7 * DAY_S, 30 * DAY_S] as const
export const TTL_UNITS_S = { minutes: 60, hours: HOUR_S, days: DAY_S } as const
export type TtlUnit = keyof typeof TTL_UNITS_S

/** A custom lifetime in seconds, or null when it is not a whole number within the API's bounds. */
export function customTtlSeconds(amount: string, unit: TtlUnit): number | null {
  if (!/^\s*\d+\s*$/.test(amount)) return null
  const seconds = Number(amount) * TTL_UNITS_S[unit]
  return seconds >= MIN_TTL_S && seconds <= MAX_TTL_S ? seconds : null
}

export type LinkState = 'active' | 'expired' | 'revoked'

export function linkState(link: ShareLink, nowMs: number): LinkState {
  if (link.revoked) return 'revoked'
  return Date.parse(link.expires_at) <= nowMs ? 'expired' : 'active'
}

/** How long until a time, rounded to the unit that reads best: { minutes } under an hour, { hours } under two days, else { days }. */
export function until(ms: number, nowMs: number): { minutes: number } | { hours: number } | { days: number } {
  const seconds = Math.max(0, (ms - nowMs) / 1000)
  const minutes = Math.round(seconds / 60)
  if (minutes < 60) return { minutes }
  const hours = Math.round(seconds / HOUR_S)
  if (hours < 48) return { hours }
  return { days: Math.round(seconds / DAY_S) }
}

// ---- the calls

async function send<T>(method: string, path: string, body?: unknown): Promise<T | null> {
  const response = await request(path, { method, body })
  if (!response.ok) throw await failure(response)
  return response.status === 204 ? null : ((await response.json()) as T)
}

export const listLinks = (signal?: AbortSignal) => getJson<ShareLink[]>('devices/share', signal)
export const getLink = (id: string) => getJson<ShareLink>(`devices/share/${encodeURIComponent(id)}`)
export const createLink = (body: { devices: string[]; ttl: number; acl: string[] }) => send<ShareCreated>('POST', 'devices/share', body) as Promise<ShareCreated>
export const extendLink = (id: string, ttl: number) => send<ShareLink>('PATCH', `devices/share/${encodeURIComponent(id)}`, { ttl }) as Promise<ShareLink>
export const revokeLink = (id: string) => send<null>('DELETE', `devices/share/${encodeURIComponent(id)}`)

// ---- links seen to end

let rememberedFor: string | null = null
const endedLinks = new Map<string, ShareLink>()

/** The links this page saw end, for `userId` (another person starts with none). */
export function endedFor(userId: string): Map<string, ShareLink> {
  if (rememberedFor !== userId) {
    endedLinks.clear()
    rememberedFor = userId
  }
  return endedLinks
}

/**
 * The list to show: the server's active links, then those seen to end (newest first, as the
 * server orders). A link that left the server's list after its expiry passed is kept as expired;
 * one that left for another reason (revoked elsewhere, out of reach) is gone.
 */
export function mergeLinks(userId: string, previous: ShareLink[], active: ShareLink[], nowMs: number): ShareLink[] {
  const ended = endedFor(userId)
  const activeIds = new Set(active.map((l) => l.id))
  for (const link of previous) if (!activeIds.has(link.id) && !ended.has(link.id) && Date.parse(link.expires_at) <= nowMs) ended.set(link.id, link)
  for (const id of activeIds) ended.delete(id)
  return [...active, ...ended.values()].sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at) || (a.id < b.id ? -1 : 1))
}

// ---- the QR code

/**
 * The QR code of `text` (qrcode-generator, error correction M: a phone reads it off a screen or a
 * print with a smudge) as one SVG path of its dark modules, each 1×1, inside a quiet zone of 4.
 */
export function qrCode(text: string): { size: number; path: string } {
  const qr = qrcode(0, 'M')
  qr.addData(text, 'Byte')
  qr.make()
  const modules = qr.getModuleCount()
  const QUIET = 4
  let path = ''
  for (let row = 0; row < modules; row++) {
    for (let col = 0; col < modules; col++) {
      // a run of dark modules in a row is one rectangle: a path a third the length
      if (!qr.isDark(row, col)) continue
      let end = col
      while (end + 1 < modules && qr.isDark(row, end + 1)) end++
      path += `M${col + QUIET} ${row + QUIET}h${end - col + 1}v1h${-(end - col + 1)}z`
      col = end
    }
  }
  return { size: modules + 2 * QUIET, path }
}

// ---- copying

/**
 * Copies `text`: the Clipboard API where the page may use it (a secure context: https or
 * localhost), else the text selected in `field` and the old copy command; when that fails too the
 * text stays selected for the person to copy ('selected').
 */
export async function copyText(text: string, field: HTMLInputElement | null): Promise<'copied' | 'selected'> {
  if (navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text)
      return 'copied'
    } catch {
      // refused (no permission, page not focused): select it instead
    }
  }
  if (field) {
    field.focus()
    field.select()
    field.setSelectionRange(0, field.value.length)
  }
  try {
    if (field && document.execCommand('copy')) return 'copied'
  } catch {
    // no copy command either
  }
  return 'selected'
}
