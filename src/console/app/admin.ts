/**
 * The Administration view's data and writes. Users, groups and models are read whole (1,000 a
 * page) and read again after a change; devices are the session's Fleet (the live map's list: an
 * admin reaches every device of the account), reloaded after a change so that the map shows it
 * too. A failed write becomes a message: the problem's `detail`, and each `errors[].path`'s
 * message beside its field.
 */
import { signal } from '@preact/signals'
import { ApiError, failure, getJson, request } from './api'
import { strings } from './strings'
import { groups as filterGroups } from './filters'
import type { Fleet } from './fleet'
import type { AdminGroup, AdminUser, DeviceModel, Geofence, Me, NotificationChannel } from './types'

export const ADMIN_TABS = ['devices', 'users', 'groups', 'keys', 'models', 'geofences', 'notifications', 'audit'] as const
export type AdminTab = (typeof ADMIN_TABS)[number]

/** `#/admin/users` → users; `#/admin` (or anything else) → devices */
export function adminTab(hash: string): AdminTab {
  const part = hash.replace(/^#\/?/, '').split('/')[1] ?? ''
  return (ADMIN_TABS as readonly string[]).includes(part) ? (part as AdminTab) : 'devices'
}
export const adminHref = (tab: AdminTab) => `#/admin/${tab}`

const PAGE = 1000

/** every page of a list that answers [] past its end */
export async function listAll<T>(path: string, signal?: AbortSignal): Promise<T[]> {
  const all: T[] = []
  const join = path.includes('?') ? '&' : '?'
  for (let offset = 0; ; offset += PAGE) {
    const page = await getJson<T[]>(`${path}${join}limit=${PAGE}&offset=${offset}`, signal)
    all.push(...page)
    if (page.length < PAGE) return all
  }
}

/** A change: the JSON answer, null for 204; a refusal throws ApiError (its problem details inside). */
export async function write<T>(method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T | null> {
  const response = await request(path, { method, body })
  if (!response.ok) throw await failure(response)
  if (response.status === 204) return null
  return (await response.json()) as T
}

export interface Failure {
  /** the problem's detail, or what went wrong when there is none */
  message: string
  /** field key (the error's path without its leading slash: `imei`, `commands/0/name`) → message */
  fields: Record<string, string>
  status: number | null
}

const sentence = (text: string) => (text ? text[0].toUpperCase() + text.slice(1) : text)

/**
 * What to show for a failed write. A 409 names no path, but its detail begins with the field when
 * there is one (`imei: … is already …`, `/name: a user named …`); `conflictField` takes a 409 that
 * names none (the last admin: the role).
 */
export function describeFailure(error: unknown, conflictField?: string): Failure {
  if (!(error instanceof ApiError)) return { message: strings.networkDown, fields: {}, status: null }
  const detail = error.problem?.detail ?? strings.admin.failed(error.status)
  const fields: Record<string, string> = {}
  for (const e of error.problem?.errors ?? []) {
    const key = e.path.replace(/^\//, '')
    if (key && !(key in fields)) fields[key] = sentence(e.message)
  }
  if (error.status === 409 && Object.keys(fields).length === 0) {
    const named = /^\/?([a-z_]+(?:\/[a-z0-9_]+)*):\s*(.+)$/.exec(detail)
    if (named) fields[named[1]] = sentence(named[2])
    else if (conflictField) fields[conflictField] = detail
  }
  return { message: detail, fields, status: error.status }
}

type Loaded<T> = { status: 'idle' | 'loading' } | { status: 'error'; message: string } | { status: 'ready'; value: T }

/** One list of the account, read on first use and again after a change. */
class AdminList<T> {
  readonly state = signal<Loaded<T[]>>({ status: 'idle' })
  private asked = 0
  constructor(private readonly path: string) {}

  /** reads it unless it is read already */
  ensure(): void {
    if (this.state.value.status === 'idle' || this.state.value.status === 'error') void this.refresh()
  }

  async refresh(): Promise<void> {
    const ask = ++this.asked
    if (this.state.value.status !== 'ready') this.state.value = { status: 'loading' }
    try {
      const value = await listAll<T>(this.path)
      if (ask === this.asked) this.state.value = { status: 'ready', value }
    } catch (error) {
      if (ask !== this.asked) return
      this.state.value = { status: 'error', message: error instanceof ApiError ? error.message : strings.networkDown }
    }
  }

  /** the list, empty until read */
  get items(): T[] {
    const state = this.state.value
    return state.status === 'ready' ? state.value : []
  }
}

/** The account as the Administration view holds it: one per signed-in session. */
export class AdminStore {
  readonly users = new AdminList<AdminUser>('users')
  readonly groups = new AdminList<AdminGroup>('groups')
  readonly models = new AdminList<DeviceModel>('models')
  /** read for the audit log's names (the geofence and notification sections keep their own lists) */
  readonly geofences = new AdminList<Geofence>('geofences')
  readonly notifications = new AdminList<NotificationChannel>('notifications')
  /** what the last change did, said once ("Truck 9 was added") */
  readonly notice = signal<string | null>(null)

  /** after a change of groups or memberships: the list here, and the live map's group filter */
  async groupsChanged(): Promise<void> {
    await this.groups.refresh()
    if (this.groups.state.value.status === 'ready') filterGroups.value = this.groups.items
  }

  userName(id: string): string | null {
    return this.users.items.find((u) => u.id === id)?.name ?? null
  }
  groupName(id: string): string | null {
    return this.groups.items.find((g) => g.id === id)?.name ?? null
  }
  modelName(id: string | null): string | null {
    if (id === null) return null
    return this.models.items.find((m) => m.id === id)?.name ?? null
  }
  geofenceName(id: string): string | null {
    return this.geofences.items.find((g) => g.id === id)?.name ?? null
  }
  notificationName(id: string): string | null {
    return this.notifications.items.find((n) => n.id === id)?.name ?? null
  }
}

export interface AdminSectionProps {
  store: AdminStore
  fleet: Fleet
  me: Me
}

/** "2024-05-01T10:00" (a datetime-local input, the browser's time zone) → ISO 8601, or null when empty or not a time */
export function localToIso(value: string): string | null {
  if (!value) return null
  const ms = new Date(value).getTime()
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null
}

/** a date as the person's browser writes it: "12 May 2025" */
export const dateOf = (iso: string) => new Date(iso).toLocaleDateString([], { dateStyle: 'medium' })
/** a date and time: "12 May 2025, 14:03" (with seconds where the order of close changes matters) */
export const dateTimeOf = (iso: string, seconds = false) => new Date(iso).toLocaleString([], { dateStyle: 'medium', timeStyle: seconds ? 'medium' : 'short' })

/** a short form of an id for a place where its name is not known */
export const shortId = (id: string) => (id.length > 8 ? `${id.slice(0, 8)}…` : id)

/** copies text: the Clipboard API where the page may use it (https, localhost), else a selected field and execCommand */
export async function copyText(text: string, fallbackField?: HTMLInputElement | null): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text)
      return true
    }
  } catch {
    // refused (no permission): try the old way
  }
  if (!fallbackField) return false
  fallbackField.focus()
  fallbackField.select()
  try {
    return document.execCommand('copy')
  } catch {
    return false
  }
}
