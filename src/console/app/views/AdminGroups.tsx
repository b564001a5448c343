import { useSignal } from '@preact/signals'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { type AdminSectionProps, type AdminStore, write } from '../admin'
import type { Fleet } from '../fleet'
import { strings } from '../strings'
import type { AdminGroup } from '../types'
import { AdminList, AdminTable, Cell, ConfirmDelete, Dialog, FormAlert, FormButtons, NameList, Pending, PickList, RowActions, SectionHead, TextField, useSave } from './AdminParts'

const s = strings.admin

type Editing = { mode: 'add' } | { mode: 'edit'; group: AdminGroup }

/** Groups join members to devices: a member reaches the devices of their groups. */
export function AdminGroups({ store, fleet }: AdminSectionProps) {
  fleet.version.value
  useEffect(() => {
    store.groups.ensure()
    store.users.ensure()
  }, [])
  const editing = useSignal<Editing | null>(null)
  const deleting = useSignal<AdminGroup | null>(null)
  const state = store.groups.state.value
  const alias = (id: string) => fleet.devices.get(id)?.body.alias ?? ''

  return (
    <section aria-labelledby="admin-groups-h">
      <SectionHead id="admin-groups-h" title={s.tabs.groups} intro={s.groupsIntro}>
        <button type="button" class="primary" onClick={() => (editing.value = { mode: 'add' })}>
          {s.addGroup}
        </button>
      </SectionHead>
      <AdminList state={state} onRetry={() => void store.groups.refresh()} empty={s.noGroupsYet}>
        {(groups) => (
          <AdminTable columns={[s.colName, s.colMembers, s.tabs.devices]}>
            {groups.map((group) => (
              <tr key={group.id} data-id={group.id}>
                <th scope="row" class="cell-name">
                  {group.name}
                </th>
                <Cell label={s.colMembers}>
                  <NameList names={group.users.map((id) => store.userName(id) ?? '').filter(Boolean)} none={s.nobody} />
                </Cell>
                <Cell label={s.tabs.devices}>
                  <NameList names={group.devices.map(alias).filter(Boolean)} total={group.devices.length} none={s.noDevicesShort} />
                </Cell>
                <RowActions name={group.name} onEdit={() => (editing.value = { mode: 'edit', group })} onDelete={() => (deleting.value = group)} />
              </tr>
            ))}
          </AdminTable>
        )}
      </AdminList>

      {editing.value && <GroupForm store={store} fleet={fleet} group={editing.value.mode === 'edit' ? editing.value.group : null} onClose={() => (editing.value = null)} />}
      <ConfirmDelete
        target={deleting}
        title={(group) => s.deleteGroupTitle(group.name)}
        body={s.deleteGroupBody}
        confirm={s.deleteGroup}
        onDelete={async (group) => {
          await write('DELETE', `groups/${encodeURIComponent(group.id)}`)
          store.notice.value = s.groupDeleted(group.name)
          void store.groupsChanged()
          void store.users.refresh()
        }}
      />
    </section>
  )
}

function GroupForm({ store, fleet, group, onClose }: { store: AdminStore; fleet: Fleet; group: AdminGroup | null; onClose: () => void }) {
  const save = useSave()
  const usersReady = store.users.state.value.status === 'ready'
  const [v, setV] = useState({ name: group?.name ?? '', users: group?.users ?? [], devices: group?.devices ?? [] })
  const set = <K extends keyof typeof v>(key: K) => (value: (typeof v)[K]) => {
    setV((old) => ({ ...old, [key]: value }))
    save.edited(key)
  }
  const deviceOptions = useMemo(
    () => fleet.order.map((d) => ({ id: d.id, label: d.body.alias, detail: d.body.imei || d.body.serial || undefined })),
    [fleet.order.length],
  )
  const userOptions = store.users.items.map((u) => ({ id: u.id, label: u.name, detail: s.roles[u.role] }))

  async function submit(event: SubmitEvent) {
    event.preventDefault()
    const name = v.name.trim()
    if (save.invalid(name ? {} : { name: s.nameRequired })) return
    // a device the list does not show (unlinked) stays in the group
    const hidden = (group?.devices ?? []).filter((id) => !fleet.devices.has(id))
    const body: Record<string, unknown> = { name, devices: [...v.devices, ...hidden.filter((id) => !v.devices.includes(id))] }
    if (usersReady) body.users = v.users
    const ok = await save.run(async () => {
      const saved = group ? await write<AdminGroup>('PATCH', `groups/${encodeURIComponent(group.id)}`, body) : await write<AdminGroup>('POST', 'groups', body)
      store.notice.value = group ? s.groupSaved(saved!.name) : s.groupAdded(saved!.name)
    })
    if (!ok) return
    onClose()
    void store.groupsChanged()
    void store.users.refresh()
  }

  const shown = (key: string) => /^(name|users|devices)(\/|$)/.test(key)
  return (
    <Dialog title={group ? s.editGroupTitle(group.name) : s.addGroup} onClose={onClose} wide>
      <form ref={save.form} onSubmit={submit} noValidate aria-busy={save.busy.value} class="admin-form">
        <FormAlert failure={save.failure.value} shown={shown} />
        <TextField id="group-name" label={s.colName} value={v.name} onInput={set('name')} error={save.error('name')} required autofocus maxLength={100} />
        <div class="form-columns">
          {usersReady ? (
            <PickList
              id="group-users"
              label={s.colMembers}
              options={userOptions}
              selected={v.users}
              onChange={set('users')}
              error={save.error('users')}
              hint={s.groupUsersHint}
              empty={s.nobody}
            />
          ) : (
            <Pending state={store.users.state.value} onRetry={() => void store.users.refresh()} />
          )}
          <PickList
            id="group-devices"
            label={s.tabs.devices}
            options={deviceOptions}
            selected={v.devices.filter((id) => fleet.devices.has(id))}
            onChange={set('devices')}
            error={save.error('devices')}
            empty={s.noDevices}
          />
        </div>
        <FormButtons busy={save.busy.value} save={group ? s.save : s.addGroup} onCancel={onClose} />
      </form>
    </Dialog>
  )
}
