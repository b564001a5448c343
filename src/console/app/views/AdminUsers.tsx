import { useSignal } from '@preact/signals'
import { useEffect, useState } from 'preact/hooks'
import { type AdminSectionProps, type AdminStore, dateOf, write } from '../admin'
import { loadMe } from '../session'
import { strings } from '../strings'
import type { AdminUser, Me } from '../types'
import { AdminList, AdminTable, Cell, ChoiceField, ConfirmDelete, DeleteButton, Dialog, EditButton, FormAlert, FormButtons, NameList, Pending, PickList, SectionHead, TextField, useSave } from './AdminParts'

const s = strings.admin
const MIN_PASSWORD = 10

type Editing = { mode: 'add' } | { mode: 'edit'; user: AdminUser } | { mode: 'password'; user: AdminUser }

/** The account's people: their role, their groups; add, change, set a password, delete. */
export function AdminUsers({ store, me }: AdminSectionProps) {
  useEffect(() => {
    store.users.ensure()
    store.groups.ensure()
  }, [])
  const editing = useSignal<Editing | null>(null)
  const deleting = useSignal<AdminUser | null>(null)
  const state = store.users.state.value

  return (
    <section aria-labelledby="admin-users-h">
      <SectionHead id="admin-users-h" title={s.tabs.users} intro={s.usersIntro}>
        <button type="button" class="primary" onClick={() => (editing.value = { mode: 'add' })}>
          {s.addUser}
        </button>
      </SectionHead>
      <AdminList state={state} onRetry={() => void store.users.refresh()}>
        {(users) => (
          <AdminTable columns={[s.colName, s.colRole, s.colGroups, s.colAdded]}>
            {users.map((user) => (
              <tr key={user.id} data-id={user.id}>
                <th scope="row" class="cell-name">
                  {user.name}
                  {user.id === me.id && <span class="badge">{s.you}</span>}
                </th>
                <Cell label={s.colRole}>
                  <span class={`role role-${user.role}`}>{s.roles[user.role]}</span>
                </Cell>
                <Cell label={s.colGroups}>
                  <NameList names={user.groups.map((id) => store.groupName(id) ?? '').filter(Boolean)} none={user.role === 'admin' ? s.allDevices : s.noGroups} />
                </Cell>
                <Cell label={s.colAdded}>{dateOf(user.created_at)}</Cell>
                <td class="row-actions">
                  <EditButton name={user.name} onClick={() => (editing.value = { mode: 'edit', user })} />
                  <button type="button" aria-label={s.passwordNamed(user.name)} onClick={() => (editing.value = { mode: 'password', user })}>
                    {s.setPassword}
                  </button>
                  <DeleteButton name={user.name} onClick={() => (deleting.value = user)} />
                </td>
              </tr>
            ))}
          </AdminTable>
        )}
      </AdminList>

      {(editing.value?.mode === 'add' || editing.value?.mode === 'edit') && (
        <UserForm store={store} me={me} user={editing.value.mode === 'edit' ? editing.value.user : null} onClose={() => (editing.value = null)} />
      )}
      {editing.value?.mode === 'password' && <PasswordForm store={store} me={me} user={editing.value.user} onClose={() => (editing.value = null)} />}
      <ConfirmDelete
        target={deleting}
        title={(user) => s.deleteUserTitle(user.name)}
        body={(user) => (user.id === me.id ? s.deleteSelfBody : s.deleteUserBody)}
        confirm={s.deleteUser}
        onDelete={async (user) => {
          await write('DELETE', `users/${encodeURIComponent(user.id)}`)
          store.notice.value = s.userDeleted(user.name)
          void store.users.refresh()
          void store.groupsChanged()
        }}
      />
    </section>
  )
}

function UserForm({ store, me, user, onClose }: { store: AdminStore; me: Me; user: AdminUser | null; onClose: () => void }) {
  const save = useSave()
  const groupsReady = store.groups.state.value.status === 'ready'
  const [v, setV] = useState({ name: user?.name ?? '', role: user?.role ?? 'member', groups: user?.groups ?? [], password: '' })
  const set = <K extends keyof typeof v>(key: K) => (value: (typeof v)[K]) => {
    setV((old) => ({ ...old, [key]: value }))
    save.edited(key)
  }
  const self = user?.id === me.id

  async function submit(event: SubmitEvent) {
    event.preventDefault()
    const name = v.name.trim()
    const errors: Record<string, string> = {}
    if (!name) errors.name = s.nameRequired
    if (!user && v.password && v.password.length < MIN_PASSWORD) errors.password = s.passwordShort(MIN_PASSWORD)
    if (save.invalid(errors)) return
    const body: Record<string, unknown> = { name, role: v.role }
    if (groupsReady) body.groups = v.groups
    if (!user && v.password) body.password = v.password
    const ok = await save.run(async () => {
      const saved = user ? await write<AdminUser>('PATCH', `users/${encodeURIComponent(user.id)}`, body) : await write<AdminUser>('POST', 'users', body)
      store.notice.value = user ? s.userSaved(saved!.name) : s.userAdded(saved!.name)
    }, 'role')
    if (!ok) return
    onClose()
    void store.users.refresh()
    void store.groupsChanged()
    // your own name or role: the header and the navigation follow
    if (self) void loadMe()
  }

  const shown = (key: string) => ['name', 'role', 'groups', 'password'].includes(key) || key.startsWith('groups/')
  return (
    <Dialog title={user ? s.editUserTitle(user.name) : s.addUser} onClose={onClose} wide>
      <form ref={save.form} onSubmit={submit} noValidate aria-busy={save.busy.value} class="admin-form">
        <FormAlert failure={save.failure.value} shown={shown} />
        <div class="form-grid">
          <TextField id="user-name" label={s.signInName} value={v.name} onInput={set('name')} error={save.error('name')} hint={s.signInNameHint} required autofocus maxLength={100} />
          {!user && (
            <TextField
              id="user-password"
              label={s.password}
              type="password"
              value={v.password}
              onInput={set('password')}
              error={save.error('password')}
              hint={s.newUserPasswordHint(MIN_PASSWORD)}
              autocomplete="new-password"
            />
          )}
        </div>
        <ChoiceField
          id="user-role"
          label={s.colRole}
          value={v.role}
          onChange={(value) => set('role')(value as AdminUser['role'])}
          error={save.error('role')}
          options={[
            { value: 'member', label: s.roles.member, detail: self ? s.demoteSelf : s.memberDetail },
            { value: 'admin', label: s.roles.admin, detail: s.adminDetail },
          ]}
        />
        {groupsReady ? (
          <PickList
            id="user-groups"
            label={s.colGroups}
            options={store.groups.items.map((g) => ({ id: g.id, label: g.name, detail: s.deviceCount(g.devices.length) }))}
            selected={v.groups}
            onChange={set('groups')}
            error={save.error('groups')}
            hint={v.role === 'admin' ? s.adminGroupsHint : s.memberGroupsHint}
            empty={s.noGroupsYet}
          />
        ) : (
          <Pending state={store.groups.state.value} onRetry={() => void store.groups.refresh()} />
        )}
        <FormButtons busy={save.busy.value} save={user ? s.save : s.addUser} onCancel={onClose} />
      </form>
    </Dialog>
  )
}

function PasswordForm({ store, me, user, onClose }: { store: AdminStore; me: Me; user: AdminUser; onClose: () => void }) {
  const save = useSave()
  const [password, setPassword] = useState('')
  const self = user.id === me.id

  async function submit(event: SubmitEvent) {
    event.preventDefault()
    if (save.invalid(password.length < MIN_PASSWORD ? { password: s.passwordShort(MIN_PASSWORD) } : {})) return
    const ok = await save.run(async () => {
      await write('PATCH', `users/${encodeURIComponent(user.id)}`, { password })
      store.notice.value = s.passwordSet(user.name)
    })
    if (ok) onClose()
  }

  return (
    <Dialog title={s.passwordTitle(user.name)} onClose={onClose}>
      <form ref={save.form} onSubmit={submit} noValidate aria-busy={save.busy.value} class="admin-form">
        <FormAlert failure={save.failure.value} shown={(key) => key === 'password'} />
        <p class="note">{self ? s.passwordSelfNote : s.passwordNote}</p>
        <TextField
          id="user-new-password"
          label={s.newPassword}
          type="password"
          value={password}
          onInput={(value) => {
            setPassword(value)
            save.edited('password')
          }}
          error={save.error('password')}
          hint={s.passwordHint(MIN_PASSWORD)}
          autocomplete="new-password"
          required
          autofocus
        />
        <FormButtons busy={save.busy.value} save={s.setPassword} onCancel={onClose} />
      </form>
    </Dialog>
  )
}
