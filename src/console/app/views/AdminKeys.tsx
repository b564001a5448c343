import { useSignal } from '@preact/signals'
import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiError } from '../api'
import { type AdminSectionProps, copyText, dateOf, dateTimeOf, listAll, localToIso, write } from '../admin'
import { now } from '../clock'
import { strings } from '../strings'
import type { ApiKey } from '../types'
import { AdminList, AdminTable, Cell, ConfirmDelete, Dialog, FormAlert, FormButtons, SectionHead, SelectField, TextField, useSave } from './AdminParts'

const s = strings.admin

type KeysState = { status: 'loading' } | { status: 'error'; message: string } | { status: 'ready'; value: ApiKey[] }
type Created = ApiKey & { key: string }

/** API keys, a user at a time: their names, last use and expiry; create one (its secret shown once), revoke one. */
export function AdminKeys({ store, me }: AdminSectionProps) {
  useEffect(() => store.users.ensure(), [])
  const userId = useSignal(me.id)
  const keys = useSignal<KeysState>({ status: 'loading' })
  const creating = useSignal(false)
  const revoking = useSignal<ApiKey | null>(null)
  const asked = useRef(0)

  async function load() {
    const ask = ++asked.current
    keys.value = { status: 'loading' }
    try {
      const value = await listAll<ApiKey>(`users/${encodeURIComponent(userId.value)}/keys`)
      if (ask === asked.current) keys.value = { status: 'ready', value }
    } catch (error) {
      if (ask === asked.current) keys.value = { status: 'error', message: error instanceof ApiError ? error.message : strings.networkDown }
    }
  }
  useEffect(() => void load(), [userId.value])

  const users = store.users.items.length > 0 ? store.users.items : [{ id: me.id, name: me.name }]
  const owner = users.find((u) => u.id === userId.value)?.name ?? me.name
  const state = keys.value
  const nowMs = now.value

  return (
    <section aria-labelledby="admin-keys-h">
      <SectionHead id="admin-keys-h" title={s.tabs.keys} intro={s.keysIntro}>
        <button type="button" class="primary" onClick={() => (creating.value = true)}>
          {s.createKey}
        </button>
      </SectionHead>
      <div class="admin-toolbar">
        <SelectField
          id="keys-user"
          label={s.keysOf}
          value={userId.value}
          onChange={(value) => (userId.value = value)}
          options={users.map((u) => ({ value: u.id, label: u.id === me.id ? s.named(u.name, s.you) : u.name }))}
        />
      </div>
      <AdminList state={state} onRetry={() => void load()} empty={s.noKeys(owner)}>
        {(apiKeys) => (
          <AdminTable columns={[s.colName, s.colCreated, s.colLastUsed, s.colExpires]}>
            {apiKeys.map((key) => {
              const expired = key.expires_at !== null && Date.parse(key.expires_at) <= nowMs
              return (
                <tr key={key.id} data-id={key.id}>
                  <th scope="row" class="cell-name">
                    {key.name || s.unnamedKey}
                  </th>
                  <Cell label={s.colCreated}>{dateOf(key.created_at)}</Cell>
                  <Cell label={s.colLastUsed}>{key.last_used_at ? dateTimeOf(key.last_used_at) : <span class="muted">{s.neverUsed}</span>}</Cell>
                  <Cell label={s.colExpires}>
                    {key.expires_at === null ? (
                      <span class="muted">{s.never}</span>
                    ) : expired ? (
                      <span class="badge badge-alert">{s.expired}</span>
                    ) : (
                      dateTimeOf(key.expires_at)
                    )}
                  </Cell>
                  <td class="row-actions">
                    <button type="button" class="danger-quiet" aria-label={s.revokeNamed(key.name || s.unnamedKey)} onClick={() => (revoking.value = key)}>
                      {s.revoke}
                    </button>
                  </td>
                </tr>
              )
            })}
          </AdminTable>
        )}
      </AdminList>

      {creating.value && (
        <KeyForm
          userId={userId.value}
          owner={owner}
          onCreated={(key) => {
            store.notice.value = s.keyCreated(key.name, owner)
            void load()
          }}
          onClose={() => (creating.value = false)}
        />
      )}
      <ConfirmDelete
        target={revoking}
        title={(key) => s.revokeTitle(key.name || s.unnamedKey)}
        body={s.revokeBody}
        confirm={s.revoke}
        onDelete={async (key) => {
          await write('DELETE', `users/${encodeURIComponent(userId.value)}/keys/${encodeURIComponent(key.id)}`)
          store.notice.value = s.keyRevoked(key.name || s.unnamedKey)
          void load()
        }}
      />
    </section>
  )
}

/** A new key's name and expiry; once made, its secret, this once, with a copy button. */
function KeyForm({ userId, owner, onCreated, onClose }: { userId: string; owner: string; onCreated: (key: Created) => void; onClose: () => void }) {
  const save = useSave()
  const [name, setName] = useState('')
  const [expires, setExpires] = useState('')
  const created = useSignal<Created | null>(null)

  async function submit(event: SubmitEvent) {
    event.preventDefault()
    const errors: Record<string, string> = {}
    const expiresAt = localToIso(expires)
    if (!name.trim()) errors.name = s.keyNameRequired
    if (expires && (expiresAt === null || Date.parse(expiresAt) <= Date.now())) errors.expires_at = s.expiryInPast
    if (save.invalid(errors)) return
    await save.run(async () => {
      const key = await write<Created>('POST', `users/${encodeURIComponent(userId)}/keys`, { name: name.trim(), ...(expiresAt ? { expires_at: expiresAt } : {}) })
      created.value = key
      onCreated(key!)
    })
  }

  if (created.value) return <KeySecret created={created.value} owner={owner} onClose={onClose} />
  return (
    <Dialog title={s.createKeyFor(owner)} onClose={onClose}>
      <form ref={save.form} onSubmit={submit} noValidate aria-busy={save.busy.value} class="admin-form">
        <FormAlert failure={save.failure.value} shown={(key) => key === 'name' || key === 'expires_at'} />
        <TextField id="key-name" label={s.keyName} value={name} onInput={(value) => {
            setName(value)
            save.edited('name')
          }} error={save.error('name')} hint={s.keyNameHint} required autofocus maxLength={100} />
        <TextField id="key-expires" label={s.keyExpires} type="datetime-local" value={expires} onInput={(value) => {
            setExpires(value)
            save.edited('expires_at')
          }} error={save.error('expires_at')} hint={s.keyExpiresHint} />
        <FormButtons busy={save.busy.value} save={s.createKey} busyLabel={s.creating} onCancel={onClose} />
      </form>
    </Dialog>
  )
}

function KeySecret({ created, owner, onClose }: { created: Created; owner: string; onClose: () => void }) {
  const field = useRef<HTMLInputElement>(null)
  const copied = useSignal<'yes' | 'no' | null>(null)
  async function copy() {
    copied.value = (await copyText(created.key, field.current)) ? 'yes' : 'no'
  }
  return (
    <Dialog title={s.keyReadyTitle(created.name)} onClose={onClose}>
      <div class="key-secret">
        <p class="warning" role="alert">
          <strong>{s.secretOnceStrong}</strong> {s.secretOnce}
        </p>
        <label for="key-secret">{s.secretLabel(owner)}</label>
        <div class="copy-row">
          <input id="key-secret" ref={field} class="mono" readOnly value={created.key} onFocus={(e) => e.currentTarget.select()} data-autofocus />
          <button type="button" class="primary" onClick={() => void copy()}>
            {s.copy}
          </button>
        </div>
        <p class="hint" role="status">
          {copied.value === 'yes' ? s.copied : copied.value === 'no' ? s.copyFailed : s.secretUse}
        </p>
        <div class="form-buttons">
          <button type="button" onClick={onClose}>
            {s.secretDone}
          </button>
        </div>
      </div>
    </Dialog>
  )
}
