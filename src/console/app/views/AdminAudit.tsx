import { useSignal } from '@preact/signals'
import { useEffect, useRef } from 'preact/hooks'
import { ApiError, getJson } from '../api'
import { type AdminSectionProps, dateTimeOf, shortId } from '../admin'
import { strings } from '../strings'
import type { AuditEntry } from '../types'
import { Cell, Pending, SectionHead } from './AdminParts'

const s = strings.admin
const PAGE_ROWS = 50

type Page = { status: 'loading' } | { status: 'error'; message: string } | { status: 'ready'; entries: AuditEntry[]; more: boolean }

/** Unix seconds of the start (or the end) of a day picked in a date input, in the browser's time zone */
function dayBound(day: string, end: boolean): number | null {
  if (!day) return null
  const ms = new Date(`${day}T${end ? '23:59:59' : '00:00:00'}`).getTime()
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : null
}

/** Every administration change of the account, newest first: who, what, when; a page at a time. */
export function AdminAudit({ store, fleet, me }: AdminSectionProps) {
  useEffect(() => {
    store.users.ensure()
    store.groups.ensure()
    store.models.ensure()
    // read afresh: the Geofences and Notifications sections keep their own lists, so these may be stale
    void store.geofences.refresh()
    void store.notifications.refresh()
  }, [])
  const offset = useSignal(0)
  const from = useSignal('')
  const to = useSignal('')
  const page = useSignal<Page>({ status: 'loading' })
  const asked = useRef(0)

  async function load() {
    const ask = ++asked.current
    page.value = { status: 'loading' }
    const fromS = dayBound(from.value, false)
    const toS = dayBound(to.value, true)
    const params = new URLSearchParams({ limit: String(PAGE_ROWS + 1), offset: String(offset.value) })
    if (fromS !== null) params.set('from', String(fromS))
    if (toS !== null) params.set('to', String(toS))
    try {
      // one more than a page says whether there is an older page
      const entries = await getJson<AuditEntry[]>(`audit?${params}`)
      if (ask === asked.current) page.value = { status: 'ready', entries: entries.slice(0, PAGE_ROWS), more: entries.length > PAGE_ROWS }
    } catch (error) {
      if (ask === asked.current) page.value = { status: 'error', message: error instanceof ApiError ? error.message : strings.networkDown }
    }
  }
  useEffect(() => void load(), [offset.value, from.value, to.value])

  function who(actor: string): string {
    if (actor === 'cli') return s.actorCli
    if (actor === me.id) return s.named(me.name, s.you)
    return store.userName(actor) ?? s.formerUser(shortId(actor))
  }
  function what(entry: AuditEntry): string {
    const id = entry.object_id
    const names: Record<string, () => string | null> = {
      user: () => store.userName(id),
      email_alerts: () => store.userName(id),
      group: () => store.groupName(id),
      model: () => store.modelName(id),
      geofence: () => store.geofenceName(id),
      notification: () => store.notificationName(id),
      device: () => fleet.devices.get(id)?.body.alias ?? null,
      account: () => (id === me.account.id ? me.account.name : null),
    }
    const name = Object.hasOwn(names, entry.object_type) ? names[entry.object_type]!() : null
    const object = s.objects[entry.object_type] ?? entry.object_type
    return s.auditWhat(s.actions[entry.action] ?? entry.action, object, name ?? shortId(id))
  }

  const state = page.value
  const pageNumber = Math.floor(offset.value / PAGE_ROWS) + 1
  return (
    <section aria-labelledby="admin-audit-h">
      <SectionHead id="admin-audit-h" title={s.tabs.audit} intro={s.auditIntro} />
      <div class="admin-toolbar">
        <div class="field date-field">
          <label for="audit-from">{s.fromDay}</label>
          <input
            id="audit-from"
            type="date"
            value={from.value}
            max={to.value || undefined}
            onChange={(e) => {
              from.value = e.currentTarget.value
              offset.value = 0
            }}
          />
        </div>
        <div class="field date-field">
          <label for="audit-to">{s.toDay}</label>
          <input
            id="audit-to"
            type="date"
            value={to.value}
            min={from.value || undefined}
            onChange={(e) => {
              to.value = e.currentTarget.value
              offset.value = 0
            }}
          />
        </div>
        <button type="button" onClick={() => void load()}>
          {s.refresh}
        </button>
      </div>
      {state.status !== 'ready' ? (
        <Pending state={state} onRetry={() => void load()} />
      ) : state.entries.length === 0 ? (
        <p class="empty-note">{offset.value === 0 ? s.noAudit : s.noOlder}</p>
      ) : (
        <table class="admin-table audit-table">
          <thead>
            <tr>
              <th scope="col">{s.colWhen}</th>
              <th scope="col">{s.colWho}</th>
              <th scope="col">{s.colWhat}</th>
            </tr>
          </thead>
          <tbody>
            {state.entries.map((entry) => (
              <tr key={entry.id} data-action={entry.action} data-object={entry.object_type} data-object-id={entry.object_id}>
                <Cell label={s.colWhen} class="nowrap">
                  <time dateTime={entry.at} title={entry.request_id ? s.requestId(entry.request_id) : undefined}>
                    {dateTimeOf(entry.at, true)}
                  </time>
                </Cell>
                <Cell label={s.colWho}>{who(entry.actor)}</Cell>
                <Cell label={s.colWhat} class="audit-what">
                  {what(entry)}
                </Cell>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {(offset.value > 0 || (state.status === 'ready' && state.more)) && (
        <nav class="pager" aria-label={s.pagesOf(s.tabs.audit)}>
          <button type="button" disabled={offset.value === 0} onClick={() => (offset.value = Math.max(0, offset.value - PAGE_ROWS))}>
            {s.newer}
          </button>
          <span>{s.pageN(pageNumber)}</span>
          <button type="button" disabled={state.status !== 'ready' || !state.more} onClick={() => (offset.value += PAGE_ROWS)}>
            {s.older}
          </button>
        </nav>
      )}
    </section>
  )
}
