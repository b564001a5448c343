import { useSignal } from '@preact/signals'
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import { ApiError, getJson } from '../api'
import { type AdminSectionProps, type AdminStore, describeFailure, listAll, write } from '../admin'
import { alarmName } from '../eventNames'
import {
  bodyOf,
  checkDraft,
  deliveryWhat,
  deliveryWhen,
  draftOf,
  eventsOf,
  knownCodes,
  logTime,
  type NotificationDraft,
  placeFailure,
  sendsOf,
  targetOf,
  testOutcome,
} from '../notifications'
import { strings } from '../strings'
import type { NotificationChannel, NotificationDelivery } from '../types'
import { AdminList, AdminTable, Cell, ChoiceField, ConfirmDelete, Dialog, FormAlert, FormButtons, NameList, Pending, PickList, RowActions, SectionHead, TextField, useSave } from './AdminParts'

const s = strings.admin
const n = strings.notifications

type Loaded<T> = { status: 'loading' } | { status: 'error'; message: string } | { status: 'ready'; value: T }
const messageOf = (error: unknown) => (error instanceof ApiError ? error.message : strings.networkDown)

/**
 * Notification channels: which events (or every position) go to which webhook, for which
 * devices; add, change, delete; each one's deliveries and a test delivery in a dialog (read only
 * when opened: the list costs one request).
 */
export function AdminNotifications({ store }: AdminSectionProps) {
  useEffect(() => store.groups.ensure(), [])
  const list = useSignal<Loaded<NotificationChannel[]>>({ status: 'loading' })
  const editing = useSignal<{ notification: NotificationChannel | null } | null>(null)
  const deleting = useSignal<NotificationChannel | null>(null)
  const opened = useSignal<NotificationChannel | null>(null)
  const asked = useRef(0)

  async function load() {
    const ask = ++asked.current
    if (list.value.status !== 'ready') list.value = { status: 'loading' }
    try {
      const value = await listAll<NotificationChannel>('notifications')
      if (ask === asked.current) list.value = { status: 'ready', value }
    } catch (error) {
      if (ask === asked.current) list.value = { status: 'error', message: messageOf(error) }
    }
  }
  useEffect(() => void load(), [])

  const state = list.value
  const groupsRead = store.groups.state.value.status === 'ready'
  return (
    <section aria-labelledby="admin-notifications-h">
      <SectionHead id="admin-notifications-h" title={s.tabs.notifications} intro={n.intro}>
        <button type="button" class="primary" onClick={() => (editing.value = { notification: null })}>
          {n.add}
        </button>
      </SectionHead>
      <AdminList state={state} onRetry={() => void load()} empty={n.none}>
        {(items) => (
          <AdminTable class="notifications-table" columns={[s.colName, n.colSends, n.colDevices, n.colTarget, n.colEnabled]}>
            {items.map((item) => (
              <tr key={item.id} data-id={item.id}>
                <th scope="row" class="cell-name">
                  {item.name}
                </th>
                <Cell label={n.colSends} class="nf-sends">
                  <NameList names={sendsOf(item)} none={n.eventsRequired} />
                </Cell>
                <Cell label={n.colDevices}>
                  {item.groups.length > 0 && !groupsRead ? (
                    <span class="muted">…</span>
                  ) : (
                    <NameList names={item.groups.map((id) => store.groupName(id) ?? n.deletedGroup)} none={n.allDevices} />
                  )}
                </Cell>
                <Cell label={n.colTarget}>
                  <span class="mono nf-host" title={targetOf(item.channel).full}>
                    {targetOf(item.channel).text}
                  </span>{' '}
                  {item.channel.type === 'webhook' ? (
                    <span class="muted small">{item.channel.secret_set ? n.signed : n.unsigned}</span>
                  ) : (
                    <span class="muted small">{n.channelTypes[item.channel.type]![0]}</span>
                  )}
                </Cell>
                <Cell label={n.colEnabled}>
                  <span class={item.enabled ? 'nf-enabled on' : 'nf-enabled off'}>{item.enabled ? n.enabledOn : n.enabledOff}</span>
                </Cell>
                <RowActions name={item.name} onEdit={() => (editing.value = { notification: item })} onDelete={() => (deleting.value = item)}>
                  <button type="button" aria-label={n.deliveriesNamed(item.name)} onClick={() => (opened.value = item)}>
                    {n.deliveries}
                  </button>
                </RowActions>
              </tr>
            ))}
          </AdminTable>
        )}
      </AdminList>

      {editing.value && (
        <NotificationForm
          store={store}
          notification={editing.value.notification}
          onSaved={() => void load()}
          onClose={() => (editing.value = null)}
        />
      )}
      {opened.value && <DeliveryLog notification={opened.value} onClose={() => (opened.value = null)} />}
      <ConfirmDelete
        target={deleting}
        title={(item) => n.deleteTitle(item.name)}
        body={n.deleteBody}
        confirm={n.deleteConfirm}
        onDelete={async (item) => {
          await write('DELETE', `notifications/${encodeURIComponent(item.id)}`)
          store.notice.value = n.deleted(item.name)
          void load()
        }}
      />
    </section>
  )
}

function NotificationForm({
  store,
  notification,
  onSaved,
  onClose,
}: {
  store: AdminStore
  notification: NotificationChannel | null
  onSaved: () => void
  onClose: () => void
}) {
  const save = useSave()
  const groupsReady = store.groups.state.value.status === 'ready'
  const [v, setV] = useState<NotificationDraft>(() => draftOf(notification))
  const set =
    <K extends keyof NotificationDraft>(key: K, field: string = key) =>
    (value: NotificationDraft[K]) => {
      setV((old) => ({ ...old, [key]: value }))
      save.edited(field)
    }
  const codes = useMemo(() => knownCodes().map((code) => ({ id: code, label: alarmName(code), detail: code })), [])

  async function submit(event: SubmitEvent) {
    event.preventDefault()
    if (save.invalid(checkDraft(v))) return
    const body = bodyOf(v, notification, groupsReady ? new Set(store.groups.items.map((g) => g.id)) : null)
    const sent = eventsOf(v)
    const ok = await save.run(async () => {
      const saved = notification
        ? await write<NotificationChannel>('PATCH', `notifications/${encodeURIComponent(notification.id)}`, body)
        : await write<NotificationChannel>('POST', 'notifications', body)
      store.notice.value = notification ? n.saved(saved!.name) : n.added(saved!.name)
    })
    if (!ok) {
      // the API names `/events/2`; the form shows it beside the list or the typed codes
      if (save.failure.value) save.failure.value = placeFailure(save.failure.value, sent)
      return
    }
    onSaved()
    onClose()
  }

  const shown = (key: string) =>
    ['name', 'positions', 'events', 'other', 'groups', 'channel/type', 'channel/url', 'channel/secret', 'channel/to', 'channel/chat_id', 'channel/bot_token', 'enabled'].includes(key)
  const secretSet = notification?.channel.type === 'webhook' && notification.channel.secret_set
  const typeNames = n.channelTypes
  return (
    <Dialog title={notification ? n.editTitle(notification.name) : n.addTitle} onClose={onClose} wide>
      <form ref={save.form} onSubmit={submit} noValidate aria-busy={save.busy.value} class="admin-form notification-form">
        <FormAlert failure={save.failure.value} shown={shown} />
        <TextField id="nf-name" label={n.name} value={v.name} onInput={set('name')} error={save.error('name')} hint={n.nameHint} required autofocus maxLength={100} />
        {notification ? (
          <p class="hint nf-type-fixed">{n.channelTypeFixed(typeNames[v.type]![0])}</p>
        ) : (
          <ChoiceField
            id="nf-type"
            label={n.channelType}
            value={v.type}
            onChange={(value) => {
              set('type', 'channel/type')(value as NotificationDraft['type'])
              if (value !== 'webhook') setV((old) => ({ ...old, type: value as NotificationDraft['type'], positions: false }))
            }}
            error={save.error('channel/type')}
            options={(['webhook', 'email', 'telegram'] as const).map((type) => ({ value: type, label: typeNames[type]![0], detail: typeNames[type]![1] }))}
          />
        )}
        {v.type === 'email' && (
          <TextField
            id="nf-to"
            label={n.to}
            value={v.to}
            onInput={set('to', 'channel/to')}
            error={save.error('channel/to')}
            hint={n.toHint}
            required
            mono
            placeholder="ops@example.com"
          />
        )}
        {v.type === 'telegram' && (
          <>
            <TextField
              id="nf-chat"
              label={n.chatId}
              value={v.chatId}
              onInput={set('chatId', 'channel/chat_id')}
              error={save.error('channel/chat_id')}
              hint={n.chatIdHint}
              required
              mono
              placeholder="-1001234567890"
            />
            <TextField
              id="nf-bot-token"
              label={n.botToken}
              type="password"
              value={v.botToken}
              onInput={set('botToken', 'channel/bot_token')}
              error={save.error('channel/bot_token')}
              hint={v.tokenSet ? n.botTokenSetHint : n.botTokenNewHint}
              autocomplete="new-password"
              placeholder={v.tokenSet ? n.botTokenSetPlaceholder : undefined}
              required={!v.tokenSet}
              maxLength={200}
            />
          </>
        )}
        {v.type === 'webhook' && (
          <>
        <TextField
          id="nf-url"
          label={n.url}
          value={v.url}
          onInput={set('url', 'channel/url')}
          error={save.error('channel/url')}
          hint={n.urlHint}
          required
          mono
          placeholder="https://hooks.example.com/fleet"
        />
        <div class="nf-secret">
          <TextField
            id="nf-secret"
            label={n.secret}
            type="password"
            value={v.secret}
            onInput={(value) => {
              set('secret', 'channel/secret')(value)
              if (value) setV((old) => ({ ...old, removeSecret: false }))
            }}
            error={save.error('channel/secret')}
            hint={!notification ? n.secretNewHint : secretSet ? n.secretSetHint : n.secretUnsetHint}
            autocomplete="new-password"
            placeholder={secretSet && !v.removeSecret ? n.secretSetPlaceholder : undefined}
            maxLength={1024}
          />
          {secretSet && (
            <label class="check">
              <input
                type="checkbox"
                checked={v.removeSecret}
                onChange={(e) => {
                  const on = e.currentTarget.checked
                  setV((old) => ({ ...old, removeSecret: on, secret: on ? '' : old.secret }))
                }}
              />
              {n.removeSecret}
            </label>
          )}
        </div>
        <ChoiceField
          id="nf-kind"
          label={n.kind}
          value={v.positions ? 'positions' : 'events'}
          onChange={(value) => {
            set('positions')(value === 'positions')
            save.edited('events')
            save.edited('other')
          }}
          error={save.error('positions')}
          options={[
            { value: 'events', label: n.kindEvents, detail: n.kindEventsDetail },
            { value: 'positions', label: n.kindPositions, detail: n.kindPositionsDetail },
          ]}
        />
          </>
        )}
        {!v.positions && (
          <fieldset class={save.error('events') || save.error('other') ? 'pick nf-events invalid' : 'pick nf-events'} aria-describedby={save.error('events') ? 'nf-events-error' : undefined}>
            <legend>{n.events}</legend>
            <label class="pick-item nf-every">
              <input
                type="checkbox"
                id="nf-every"
                checked={v.every}
                onChange={(e) => {
                  set('every', 'events')(e.currentTarget.checked)
                  save.edited('other')
                }}
              />
              <span class="pick-text">
                <span class="choice-label">{n.everyEvent}</span>
                <span class="hint">{n.everyEventDetail}</span>
              </span>
            </label>
            {/* every event: the list goes (what was checked comes back with it) */}
            <div class="nf-codes" hidden={v.every}>
              {codes.map((code) => (
                <label key={code.id} class="pick-item">
                  <input
                    type="checkbox"
                    value={code.id}
                    checked={v.codes.includes(code.id)}
                    onChange={(e) => set('codes', 'events')(e.currentTarget.checked ? [...v.codes, code.id] : v.codes.filter((c) => c !== code.id))}
                  />
                  <span class="pick-text">
                    <span>{code.label}</span>
                    <span class="hint mono">{code.detail}</span>
                  </span>
                </label>
              ))}
            </div>
            {save.error('events') && (
              <p id="nf-events-error" class="field-error">
                {save.error('events')}
              </p>
            )}
            {!v.every && (
              <TextField id="nf-other" label={n.otherCodes} value={v.other} onInput={set('other')} error={save.error('other')} hint={n.otherCodesHint} mono />
            )}
          </fieldset>
        )}
        {groupsReady ? (
          <PickList
            id="nf-groups"
            label={n.groups}
            options={store.groups.items.map((g) => ({ id: g.id, label: g.name, detail: s.deviceCount(g.devices.length) }))}
            selected={v.groups}
            onChange={set('groups')}
            error={save.error('groups')}
            hint={n.groupsHint}
            empty={s.noGroupsYet}
          />
        ) : (
          <Pending state={store.groups.state.value} onRetry={() => void store.groups.refresh()} />
        )}
        <div class="nf-enabled-field">
          <label class="check">
            <input type="checkbox" id="nf-enabled" checked={v.enabled} onChange={(e) => set('enabled')(e.currentTarget.checked)} aria-describedby="nf-enabled-hint" />
            {n.enabled}
          </label>
          <p id="nf-enabled-hint" class="hint">
            {n.enabledHint}
          </p>
        </div>
        <FormButtons busy={save.busy.value} save={notification ? s.save : n.add} busyLabel={notification ? undefined : s.creating} onCancel={onClose} />
      </form>
    </Dialog>
  )
}

const PAGE_ROWS = 20
/** the first page is read again this often while the log is open: deliveries move on their own */
const REFRESH_MS = 10_000

type LogPage = Loaded<{ rows: NotificationDelivery[]; more: boolean }>
type Test = { state: 'idle' } | { state: 'busy' } | { state: 'done'; ok: boolean; text: string }

function StatusMark({ status }: { status: string }) {
  const glyph = status === 'delivered' ? '✓' : status === 'dead' ? '✕' : '↻'
  return (
    <span class={`delivery-status ${status}`} title={n.statusDetail[status]}>
      <span aria-hidden="true">{glyph}</span> {n.status[status] ?? status}
    </span>
  )
}

/** A channel's deliveries, newest first, a page at a time, re-read while open; a test delivery and its outcome. */
function DeliveryLog({ notification, onClose }: { notification: NotificationChannel; onClose: () => void }) {
  const offset = useSignal(0)
  const page = useSignal<LogPage>({ status: 'loading' })
  const test = useSignal<Test>({ state: 'idle' })
  const asked = useRef(0)
  const path = `notifications/${encodeURIComponent(notification.id)}`

  /** `quiet`: keep the rows shown while reading (a refresh, not a new page) */
  async function load(quiet = false) {
    const ask = ++asked.current
    if (!quiet || page.value.status !== 'ready') page.value = { status: 'loading' }
    try {
      // one more than a page says whether there is an older page
      const rows = await getJson<NotificationDelivery[]>(`${path}/deliveries?limit=${PAGE_ROWS + 1}&offset=${offset.value}`)
      if (ask === asked.current) page.value = { status: 'ready', value: { rows: rows.slice(0, PAGE_ROWS), more: rows.length > PAGE_ROWS } }
    } catch (error) {
      if (ask === asked.current) page.value = { status: 'error', message: messageOf(error) }
    }
  }
  useEffect(() => {
    void load()
    if (offset.value !== 0) return
    const timer = setInterval(() => void load(true), REFRESH_MS)
    return () => clearInterval(timer)
  }, [offset.value])

  async function sendTest() {
    // the button stays focusable while busy (aria-disabled): a click then does nothing
    if (test.value.state === 'busy') return
    test.value = { state: 'busy' }
    try {
      const delivery = await write<NotificationDelivery>('POST', `${path}/test`)
      test.value = { state: 'done', ...testOutcome(delivery!) }
    } catch (error) {
      test.value = { state: 'done', ok: false, text: n.testFailed(describeFailure(error).message.replace(/\.$/, '')) }
    }
    if (offset.value === 0) void load(true)
    else offset.value = 0
  }

  const state = page.value
  const newest = offset.value === 0 && state.status === 'ready' ? (state.value.rows[0] ?? null) : null
  const busy = test.value.state === 'busy'
  return (
    <Dialog title={n.logTitle(notification.name)} onClose={onClose} wide>
      <div class="delivery-log">
        <dl class="nf-summary">
          <div>
            <dt>{n.sendsTo}</dt>
            <dd class="mono">{targetOf(notification.channel).full}</dd>
          </div>
          <div>
            <dt>{n.colSends}</dt>
            <dd>{sendsOf(notification).join(', ')}</dd>
          </div>
          <div>
            <dt>{n.lastDelivery}</dt>
            <dd class="nf-last">
              {state.status !== 'ready' || offset.value !== 0 ? (
                <span class="muted">…</span>
              ) : newest ? (
                <>
                  <StatusMark status={newest.status} /> <span class="muted">{deliveryWhat(newest)} · {logTime(newest.created_at)}</span>
                </>
              ) : (
                <span class="muted">{n.lastNone}</span>
              )}
            </dd>
          </div>
        </dl>
        <div class="nf-test">
          <button type="button" class="primary" onClick={() => void sendTest()} aria-disabled={busy ? 'true' : undefined} data-autofocus>
            {busy ? s.working : n.sendTest}
          </button>
          <p
            class={test.value.state === 'done' ? (test.value.ok ? 'nf-test-outcome ok' : 'nf-test-outcome failed') : 'nf-test-outcome'}
            role="status"
            aria-live="polite"
          >
            {test.value.state === 'busy' ? n.testing : test.value.state === 'done' ? test.value.text : ''}
          </p>
        </div>
        <div class="nf-log-head">
          <h3 id="nf-log-h">{n.deliveries}</h3>
          <button type="button" onClick={() => void load(true)}>
            {s.refresh}
          </button>
        </div>
        {state.status !== 'ready' ? (
          <Pending state={state} onRetry={() => void load()} />
        ) : state.value.rows.length === 0 ? (
          <p class="empty-note">{offset.value === 0 ? n.noDeliveries : n.noOlder}</p>
        ) : (
          <table class="admin-table delivery-table" aria-labelledby="nf-log-h">
            <thead>
              <tr>
                <th scope="col">{n.colCreated}</th>
                <th scope="col">{n.colWhat}</th>
                <th scope="col">{n.colStatus}</th>
                <th scope="col">{n.colAttempts}</th>
                <th scope="col">{n.colAnswer}</th>
                <th scope="col">{n.colWhen}</th>
              </tr>
            </thead>
            <tbody>
              {state.value.rows.map((d) => {
                const when = deliveryWhen(d)
                const extra = d.last_error && d.last_error !== (d.last_status_code === null ? '' : `HTTP ${d.last_status_code}`) ? d.last_error : null
                return (
                  <tr key={d.id} data-id={d.id} data-status={d.status} data-type={d.type}>
                    <th scope="row" class="nowrap nf-time">
                      <time dateTime={d.created_at}>{logTime(d.created_at)}</time>
                    </th>
                    <Cell label={n.colWhat} class="nf-what">
                      {deliveryWhat(d)}
                    </Cell>
                    <Cell label={n.colStatus}>
                      <StatusMark status={d.status} />
                    </Cell>
                    <Cell label={n.colAttempts} class="nf-attempts">
                      {d.attempts}
                    </Cell>
                    <Cell label={n.colAnswer} class="nf-answer">
                      {d.last_status_code !== null ? (
                        notification.channel.type === 'email' ? n.smtpStatus(d.last_status_code) : n.httpStatus(d.last_status_code)
                      ) : d.attempts > 0 ? (
                        <span class="muted">{n.noAnswer}</span>
                      ) : (
                        <span class="muted">—</span>
                      )}
                      {extra && <span class="nf-error">{extra}</span>}
                    </Cell>
                    <Cell label={n.colWhen} class="nf-when">
                      {when ?? <span class="muted">—</span>}
                    </Cell>
                  </tr>
                )
              })}
            </tbody>
          </table>
        )}
        {(offset.value > 0 || (state.status === 'ready' && state.value.more)) && (
          <nav class="pager" aria-label={n.pages}>
            <button type="button" disabled={offset.value === 0} onClick={() => (offset.value = Math.max(0, offset.value - PAGE_ROWS))}>
              {s.newer}
            </button>
            <span>{s.pageN(Math.floor(offset.value / PAGE_ROWS) + 1)}</span>
            <button type="button" disabled={state.status !== 'ready' || !state.value.more} onClick={() => (offset.value += PAGE_ROWS)}>
              {s.older}
            </button>
          </nav>
        )}
      </div>
    </Dialog>
  )
}
