import { useSignal } from '@preact/signals'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { type AdminSectionProps, type AdminStore, write } from '../admin'
import type { Fleet, FleetDevice } from '../fleet'
import { deviceHref } from '../router'
import { strings } from '../strings'
import type { Device, DeviceState } from '../types'
import { AdminTable, Cell, ConfirmDelete, Dialog, FormAlert, FormButtons, NameList, Pager, Pending, PickList, RowActions, SectionHead, SelectField, TextField, useSave } from './AdminParts'
import { StateMark } from './StateMark'
import { UnknownDevices } from './AdminUnknown'

const s = strings.admin
const PAGE_ROWS = 50
const IMEI = /^\d{15}$/
const SERIAL = /^[\x21-\x7e]{1,64}$/
/**
 * What an admin may set: `unlink` would hide the device from every list, the console's included;
 * `moving` and `stopped` are what its reports say (the API still takes them, the form does not offer them)
 */
const SETTABLE_STATES: DeviceState[] = ['new', 'off', 'suspended', 'stolen']
/** the overspeed limit's bounds, as the API's geofence limit (km/h) */
const MAX_SPEED_LIMIT_KMH = 1000

/** what an unknown identifier fills in (the Add of the list of those that tried to report) */
type Prefill = { imei: string; serial: string; model: string }
type Editing = { mode: 'add'; prefill?: Prefill } | { mode: 'edit'; device: Device }

/** The account's devices: the live map's list, with their models, identifiers and groups. */
export function AdminDevices({ store, fleet }: AdminSectionProps) {
  fleet.version.value // follow the fleet (added, removed, states)
  useEffect(() => {
    store.groups.ensure()
    store.models.ensure()
  }, [])
  const search = useSignal('')
  const page = useSignal(0)
  const editing = useSignal<Editing | null>(null)
  const deleting = useSignal<FleetDevice | null>(null)

  const groups = store.groups.items
  const groupsOf = useMemo(() => {
    const map = new Map<string, string[]>()
    for (const group of groups) for (const id of group.devices) map.set(id, [...(map.get(id) ?? []), group.name])
    return map
  }, [groups])

  const query = search.value.trim().toLowerCase()
  const matching = query
    ? fleet.order.filter((d) => d.haystack.includes(query) || (store.modelName(d.body.model) ?? '').toLowerCase().includes(query))
    : fleet.order
  const pages = Math.max(1, Math.ceil(matching.length / PAGE_ROWS))
  const current = Math.min(page.value, pages - 1)
  const rows = matching.slice(current * PAGE_ROWS, (current + 1) * PAGE_ROWS)
  const models = store.models.items
  const editingDevice = editing.value?.mode === 'edit' ? editing.value.device : null

  return (
    <section aria-labelledby="admin-devices-h">
      <SectionHead id="admin-devices-h" title={s.tabs.devices} intro={s.devicesIntro}>
        <button type="button" class="primary" onClick={() => (editing.value = { mode: 'add' })}>
          {s.addDevice}
        </button>
      </SectionHead>
      <div class="admin-toolbar">
        <div class="field">
          <label for="admin-devices-search">{strings.search}</label>
          <input
            id="admin-devices-search"
            type="search"
            value={search.value}
            placeholder={s.devicesSearch}
            onInput={(e) => {
              search.value = e.currentTarget.value
              page.value = 0
            }}
          />
        </div>
        <p class="count" aria-live="polite">
          {strings.shownOfTotal(matching.length, fleet.order.length)}
        </p>
      </div>
      {fleet.loadError.value ? (
        <Pending state={{ status: 'error', message: fleet.loadError.value }} onRetry={() => void fleet.reload()} />
      ) : fleet.order.length === 0 ? (
        fleet.loading.value ? <Pending state={{ status: 'loading' }} onRetry={() => {}} /> : <p class="empty-note">{s.noDevices}</p>
      ) : (
        <>
          <AdminTable columns={[s.colName, s.colModel, s.colIdentifier, s.colGroups, s.colState]}>
            {rows.map((d) => (
              <tr key={d.id} data-id={d.id}>
                <th scope="row" class="cell-name">
                  <a href={deviceHref(d.id)}>{d.body.alias}</a>
                </th>
                <Cell label={s.colModel}>{d.body.model === null ? <span class="muted">{s.modelNotYet}</span> : (store.modelName(d.body.model) ?? strings.unknown)}</Cell>
                <Cell label={s.colIdentifier} class="mono">
                  {d.body.imei || d.body.serial || strings.unknown}
                  {d.body.imei && d.body.serial && <span class="hint"> · {d.body.serial}</span>}
                </Cell>
                <Cell label={s.colGroups}>
                  <NameList names={groupsOf.get(d.id) ?? []} none={s.noGroups} />
                </Cell>
                <Cell label={s.colState}>
                  <span class="state-cell">
                    <StateMark state={d.state} />
                    {strings.states[d.state] ?? d.state}
                  </span>
                </Cell>
                <RowActions name={d.body.alias} onEdit={() => (editing.value = { mode: 'edit', device: d.body })} onDelete={() => (deleting.value = d)} />
              </tr>
            ))}
          </AdminTable>
          {matching.length === 0 && <p class="empty-note">{strings.noMatch}</p>}
          <Pager page={current} pages={pages} onPage={(p) => (page.value = p)} label={s.pagesOf(s.tabs.devices)} />
        </>
      )}

      <UnknownDevices
        version={fleet.version.value}
        onAdd={(unknown) => {
          // the protocol's model: the built-in one, else the only one of the account for it
          const forProtocol = models.filter((m) => m.protocol === unknown.protocol)
          const model = forProtocol.find((m) => m.account === null) ?? (forProtocol.length === 1 ? forProtocol[0] : undefined)
          const imei = IMEI.test(unknown.identifier)
          editing.value = { mode: 'add', prefill: { imei: imei ? unknown.identifier : '', serial: imei ? '' : unknown.identifier, model: model?.id ?? '' } }
        }}
      />

      {editing.value && (
        <DeviceForm
          store={store}
          fleet={fleet}
          device={editingDevice}
          groupIds={editingDevice ? groups.filter((g) => g.devices.includes(editingDevice.id)).map((g) => g.id) : []}
          models={models}
          prefill={editing.value.mode === 'add' ? editing.value.prefill : undefined}
          onClose={() => (editing.value = null)}
        />
      )}
      <ConfirmDelete
        target={deleting}
        title={(device) => s.deleteDeviceTitle(device.body.alias)}
        body={s.deleteDeviceBody}
        confirm={s.deleteDevice}
        onDelete={async (device) => {
          await write('DELETE', `devices/${encodeURIComponent(device.id)}`)
          store.notice.value = s.deviceDeleted(device.body.alias)
          void fleet.reload()
          void store.groupsChanged()
        }}
      />
    </section>
  )
}

function DeviceForm({
  store,
  fleet,
  device,
  groupIds,
  models,
  prefill,
  onClose,
}: {
  store: AdminStore
  fleet: Fleet
  device: Device | null
  groupIds: string[]
  models: { id: string; name: string; protocol: string | null }[]
  prefill?: Prefill
  onClose: () => void
}) {
  const save = useSave()
  const groupsReady = store.groups.state.value.status === 'ready'
  const [v, setV] = useState({
    alias: device?.alias ?? '',
    // left empty: the built-in model of the protocol it first reports on
    model: device?.model ?? prefill?.model ?? '',
    imei: device?.imei ?? prefill?.imei ?? '',
    serial: device?.serial ?? prefill?.serial ?? '',
    iccid: device?.iccid ?? '',
    state: device?.state ?? 'new',
    groups: groupIds,
    speedLimit: typeof device?.properties?.speed_limit === 'number' ? String(device.properties.speed_limit) : '',
    plate: typeof device?.properties?.plate === 'string' ? device.properties.plate : '',
  })
  const set = <K extends keyof typeof v>(key: K) => (value: (typeof v)[K]) => {
    setV((old) => ({ ...old, [key]: value }))
    save.edited(key)
    // either identifier answers "an IMEI or a serial is required"
    if (key === 'serial') save.edited('imei')
  }

  async function submit(event: SubmitEvent) {
    event.preventDefault()
    const alias = v.alias.trim()
    const imei = v.imei.trim()
    const serial = v.serial.trim()
    const iccid = v.iccid.trim()
    const errors: Record<string, string> = {}
    if (!alias) errors.alias = s.aliasRequired
    if (!imei && !serial) errors.imei = s.identifierRequired
    if (imei && !IMEI.test(imei)) errors.imei = s.imeiShape
    if (serial && !SERIAL.test(serial)) errors.serial = s.serialShape
    const limitText = v.speedLimit.trim()
    const speedLimit = limitText === '' ? null : Number(limitText)
    if (speedLimit !== null && !(Number.isFinite(speedLimit) && speedLimit > 0 && speedLimit <= MAX_SPEED_LIMIT_KMH)) errors['properties/speed_limit'] = s.speedLimitShape
    if (save.invalid(errors)) return
    const body: Record<string, unknown> = v.model ? { alias, model: v.model } : { alias }
    // the API replaces the properties: the ones this form does not edit go back as they were
    const properties: Record<string, unknown> = { ...(device?.properties ?? {}) }
    delete properties.speed_limit
    delete properties.plate
    if (speedLimit !== null) properties.speed_limit = speedLimit
    if (v.plate.trim()) properties.plate = v.plate.trim()
    // the state only when changed: one its reports set meanwhile is not undone
    if (device) Object.assign(body, { imei, serial, iccid, properties }, v.state !== device.state ? { state: v.state } : {})
    else Object.assign(body, imei ? { imei } : {}, serial ? { serial } : {}, iccid ? { iccid } : {}, Object.keys(properties).length > 0 ? { properties } : {})
    // the groups are sent only when they were read: a PATCH replaces them
    if (groupsReady) body.groups = v.groups
    const ok = await save.run(async () => {
      const saved = device
        ? await write<Device>('PATCH', `devices/${encodeURIComponent(device.id)}`, body)
        : await write<Device>('POST', 'devices', body)
      store.notice.value = device ? s.deviceSaved(saved!.alias) : s.deviceAdded(saved!.alias)
    })
    if (!ok) return
    onClose()
    void fleet.reload()
    void store.groupsChanged()
  }

  const shown = (key: string) =>
    ['alias', 'model', 'imei', 'serial', 'iccid', 'state', 'groups', 'properties/speed_limit'].includes(key) || key.startsWith('groups/')
  // a device that has a model keeps one (the API cannot take it away): "from the protocol" only before
  const fromProtocol = !device || device.model === null ? [{ value: '', label: s.modelFromProtocol }] : []
  const modelOptions = [...fromProtocol, ...models.map((m) => ({ value: m.id, label: m.protocol ? `${m.name} (${m.protocol})` : m.name }))]
  return (
    <Dialog title={device ? s.editDeviceTitle(device.alias) : s.addDevice} onClose={onClose} wide>
      <form ref={save.form} onSubmit={submit} noValidate aria-busy={save.busy.value} class="admin-form">
        <FormAlert failure={save.failure.value} shown={shown} />
        <div class="form-grid">
          <TextField id="device-alias" label={s.alias} value={v.alias} onInput={set('alias')} error={save.error('alias')} required autofocus maxLength={100} />
          <SelectField
            id="device-model"
            label={s.model}
            value={v.model}
            onChange={set('model')}
            options={modelOptions}
            error={save.error('model')}
            hint={s.modelHint}
          />
          {device && (
            <SelectField
              id="device-state"
              label={s.state}
              value={v.state}
              onChange={(value) => set('state')(value as DeviceState)}
              // the state it has stays shown (e.g. moving), even when the form would not set it
              options={(SETTABLE_STATES.includes(device.state) ? SETTABLE_STATES : [device.state, ...SETTABLE_STATES]).map((state) => ({ value: state, label: strings.states[state] ?? state }))}
              error={save.error('state')}
              hint={s.stateHint}
            />
          )}
        </div>
        <fieldset class="group-box" aria-describedby="device-identifiers-hint">
          <legend>{s.identifiers}</legend>
          <p id="device-identifiers-hint" class="hint">
            {s.identifiersHint}
          </p>
          <div class="form-grid">
            <TextField
              id="device-imei"
              label={s.imei}
              value={v.imei}
              onInput={set('imei')}
              error={save.error('imei')}
              hint={s.imeiHint}
              inputMode="numeric"
              maxLength={15}
              mono
            />
            <TextField id="device-serial" label={s.serial} value={v.serial} onInput={set('serial')} error={save.error('serial')} hint={s.serialHint} maxLength={64} mono />
            <TextField id="device-iccid" label={s.iccid} value={v.iccid} onInput={set('iccid')} error={save.error('iccid')} hint={s.iccidHint} maxLength={32} mono />
          </div>
        </fieldset>
        <div class="form-grid">
          <TextField
            id="device-speed-limit"
            label={s.speedLimit}
            value={v.speedLimit}
            onInput={(value) => {
              setV((old) => ({ ...old, speedLimit: value }))
              save.edited('properties/speed_limit')
            }}
            error={save.error('properties/speed_limit')}
            hint={s.speedLimitHint}
            inputMode="numeric"
            maxLength={8}
          />
          <TextField id="device-plate" label={s.plate} value={v.plate} onInput={set('plate')} error={save.error('plate')} hint={s.plateHint} maxLength={32} />
        </div>
        {groupsReady ? (
          <PickList
            id="device-groups"
            label={s.colGroups}
            options={store.groups.items.map((g) => ({ id: g.id, label: g.name }))}
            selected={v.groups}
            onChange={set('groups')}
            error={save.error('groups')}
            hint={s.deviceGroupsHint}
            empty={s.noGroupsYet}
          />
        ) : (
          <Pending state={store.groups.state.value} onRetry={() => void store.groups.refresh()} />
        )}
        <FormButtons busy={save.busy.value} save={device ? s.save : s.addDevice} busyLabel={s.saving} onCancel={onClose} />
      </form>
    </Dialog>
  )
}
