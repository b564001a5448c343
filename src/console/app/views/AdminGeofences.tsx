import { useSignal } from '@preact/signals'
import L from 'leaflet'
import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiError } from '../api'
import { type AdminSectionProps, type AdminStore, write } from '../admin'
import type { Fleet } from '../fleet'
import { areaProblem, DEFAULT_RADIUS_M, type Draft, draftOf, GeofenceEditorMap, type Shape, toArea } from '../geofenceEditor'
import { loadGeofences } from '../geofenceOverlay'
import { areaBounds, cornerCount } from '../geofenceShapes'
import { strings } from '../strings'
import type { Geofence } from '../types'
import { AdminList, AdminTable, Cell, ChoiceField, ConfirmDelete, Dialog, FormAlert, FormButtons, Pending, PickList, RowActions, SectionHead, TextField, useSave } from './AdminParts'

const s = strings.admin
const g = strings.geofences

/** how long the radius typing pauses before the map fits the circle */
const RADIUS_SETTLE_MS = 400

type Loaded = { status: 'loading' } | { status: 'error'; message: string } | { status: 'ready'; value: Geofence[] }

const shapeOf = (geofence: Geofence) => (geofence.area.type === 'Circle' ? g.circleOf(geofence.area.radius) : g.polygonOf(cornerCount(geofence.area)))

/**
 * Geofences: areas on the map whose crossing is an event, each for some groups (or every device)
 * and with an optional speed limit. The list, and a form that draws the area on a map.
 */
export function AdminGeofences({ store, fleet }: AdminSectionProps) {
  useEffect(() => store.groups.ensure(), [])
  const list = useSignal<Loaded>({ status: 'loading' })
  const editing = useSignal<{ geofence: Geofence | null } | null>(null)
  const deleting = useSignal<Geofence | null>(null)
  const asked = useRef(0)

  async function load() {
    const ask = ++asked.current
    if (list.value.status !== 'ready') list.value = { status: 'loading' }
    try {
      const value = await loadGeofences()
      if (ask === asked.current) list.value = { status: 'ready', value }
    } catch (error) {
      if (ask === asked.current) list.value = { status: 'error', message: error instanceof ApiError ? error.message : strings.networkDown }
    }
  }
  useEffect(() => void load(), [])

  const state = list.value
  const groupsOf = (geofence: Geofence) => {
    if (geofence.groups.length === 0) return <span class="muted">{g.everyDevice}</span>
    const names = geofence.groups.map((id) => store.groupName(id)).filter((name): name is string => name !== null)
    return names.length > 0 ? <span>{names.join(', ')}</span> : <span class="muted">{g.deletedGroups}</span>
  }
  return (
    <section aria-labelledby="admin-geofences-h">
      <SectionHead id="admin-geofences-h" title={s.tabs.geofences} intro={g.intro}>
        <button type="button" class="primary" onClick={() => (editing.value = { geofence: null })}>
          {g.add}
        </button>
      </SectionHead>
      <AdminList state={state} onRetry={() => void load()} empty={g.none}>
        {(geofences) => (
          <AdminTable class="geofences-table" columns={[s.colName, g.colShape, g.colGroups, g.colSpeedLimit]}>
            {geofences.map((geofence) => (
              <tr key={geofence.id} data-id={geofence.id}>
                <th scope="row" class="cell-name">
                  {geofence.name}
                </th>
                <Cell label={g.colShape}>{shapeOf(geofence)}</Cell>
                <Cell label={g.colGroups}>{groupsOf(geofence)}</Cell>
                <Cell label={g.colSpeedLimit}>{geofence.speed_limit === null ? <span class="muted">{g.noLimit}</span> : g.kmh(geofence.speed_limit)}</Cell>
                <RowActions name={geofence.name} onEdit={() => (editing.value = { geofence })} onDelete={() => (deleting.value = geofence)} />
              </tr>
            ))}
          </AdminTable>
        )}
      </AdminList>

      {editing.value && (
        <GeofenceForm
          store={store}
          fleet={fleet}
          geofence={editing.value.geofence}
          others={state.status === 'ready' ? state.value.filter((o) => o.id !== editing.value?.geofence?.id) : []}
          onClose={() => (editing.value = null)}
          onSaved={() => void load()}
        />
      )}
      <ConfirmDelete
        target={deleting}
        title={(geofence) => g.deleteTitle(geofence.name)}
        body={g.deleteBody}
        confirm={g.deleteButton}
        onDelete={async (geofence) => {
          await write('DELETE', `geofences/${encodeURIComponent(geofence.id)}`)
          store.notice.value = g.deleted(geofence.name)
          void load()
        }}
      />
    </section>
  )
}

/** where a new geofence's map opens: over the fleet, else over the other geofences, else the world */
function startView(fleet: Fleet, others: readonly Geofence[], geofence: Geofence | null): L.LatLngBounds | null {
  if (geofence) return areaBounds(geofence.area)
  const bounds = L.latLngBounds([])
  for (const device of fleet.order) if (device.latitude !== null) bounds.extend([device.latitude, device.longitude!])
  if (!bounds.isValid()) for (const other of others) bounds.extend(areaBounds(other.area))
  return bounds.isValid() ? bounds : null
}

function GeofenceForm({
  store,
  fleet,
  geofence,
  others,
  onClose,
  onSaved,
}: {
  store: AdminStore
  fleet: Fleet
  geofence: Geofence | null
  others: Geofence[]
  onClose: () => void
  onSaved: () => void
}) {
  const save = useSave()
  const [v, setV] = useState({
    name: geofence?.name ?? '',
    speedLimit: geofence?.speed_limit === null || geofence?.speed_limit === undefined ? '' : String(geofence.speed_limit),
    groups: geofence?.groups ?? [],
  })
  /** groups are sent only once changed: a stored geofence whose groups were all deleted matches no device, and must not widen to all */
  const [groupsChanged, setGroupsChanged] = useState(false)
  const set = <K extends keyof typeof v>(key: K, field: string) => (value: (typeof v)[K]) => {
    setV((old) => ({ ...old, [key]: value }))
    if (key === 'groups') setGroupsChanged(true)
    save.edited(field)
  }
  const [draft, setDraft] = useState<Draft>(() => draftOf(geofence?.area ?? null))
  /** the area is sent only when the person changed it (a stored polygon's holes stay otherwise) */
  const [areaChanged, setAreaChanged] = useState(geofence === null)
  const change = (next: (old: Draft) => Draft) => {
    setDraft(next)
    setAreaChanged(true)
    save.edited('area')
  }

  const mapRef = useRef<HTMLDivElement>(null)
  const editor = useRef<GeofenceEditorMap | null>(null)
  useEffect(() => {
    const body = document.body.dataset
    const map = new GeofenceEditorMap(
      mapRef.current!,
      { tileUrl: body.tileUrl ?? '', attribution: body.tileAttribution ?? '' },
      {
        click: (at) => place(at),
        moveCentre: (at) => change((d) => ({ ...d, circle: { ...d.circle, centre: at } })),
        radius: (metres) => change((d) => ({ ...d, circle: { ...d.circle, radius: String(metres) } })),
        movePoint: (index, at) =>
          change((d) => ({ ...d, polygon: { ...d.polygon, points: d.polygon.points.map((p, i) => (i === index ? at : p)) } })),
        close: () => change((d) => ({ ...d, polygon: { ...d.polygon, closed: true } })),
      },
      startView(fleet, others, geofence),
    )
    map.showOthers(others)
    editor.current = map
    // the dialog opens after this runs: the map takes its size (and its first view) then
    const observer = new ResizeObserver(() => map.resized())
    observer.observe(mapRef.current!)
    return () => {
      observer.disconnect()
      map.destroy()
      editor.current = null
    }
  }, [])
  useEffect(() => editor.current?.draw(draft), [draft])
  // a typed radius brings the whole circle into view once the typing pauses
  const radiusTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined)
  useEffect(() => () => clearTimeout(radiusTimer.current), [])

  /** a click on the map, or a button at the cross: the circle's centre, or the polygon's next corner */
  function place(at: L.LatLng) {
    // a first centre with the radius as it came: one that shows at this zoom (a 200 m circle is a dot over a country)
    const radius = editor.current?.radiusForView()
    change((d) => {
      if (d.shape === 'Circle') {
        const untouched = d.circle.centre === null && d.circle.radius === String(DEFAULT_RADIUS_M) && radius !== undefined
        return { ...d, circle: { centre: at, radius: untouched ? String(radius) : d.circle.radius } }
      }
      if (d.polygon.closed) return d
      return { ...d, polygon: { points: [...d.polygon.points, at], closed: false } }
    })
  }
  const placeAtCross = () => editor.current && place(editor.current.centre())

  async function submit(event: SubmitEvent) {
    event.preventDefault()
    const name = v.name.trim()
    const limitText = v.speedLimit.trim()
    const limit = limitText === '' ? null : Number(limitText.replace(',', '.'))
    const problems: Record<string, string> = {}
    if (!name) problems.name = s.nameRequired
    if (limit !== null && !Number.isFinite(limit)) problems.speed_limit = g.speedLimitNotNumber
    const area = areaChanged ? toArea(draft) : null
    if (area && 'field' in area) problems[area.field] = area.message
    if (save.invalid(problems)) return
    const body: Record<string, unknown> = { name, speed_limit: limit }
    if (groupsChanged) body.groups = v.groups
    if (area && 'area' in area) body.area = area.area
    const ok = await save.run(async () => {
      const saved = geofence
        ? await write<Geofence>('PATCH', `geofences/${encodeURIComponent(geofence.id)}`, body)
        : await write<Geofence>('POST', 'geofences', body)
      store.notice.value = geofence ? g.saved(saved!.name) : g.added(saved!.name)
    })
    if (!ok) return
    onClose()
    onSaved()
  }

  const corners = draft.polygon.points.length
  // the server's words about the area: beside the radius, or under the map with corners as numbered there
  const fields = save.failure.value?.fields ?? {}
  const radiusError = fields['area/radius']
  const areaKey = Object.keys(fields).find((key) => (key === 'area' || key.startsWith('area/')) && key !== 'area/radius')
  const areaError = areaKey === undefined ? undefined : areaKey.startsWith('area/coordinates') ? areaProblem(fields[areaKey]!, corners) : fields[areaKey]
  const groupsReady = store.groups.state.value.status === 'ready'
  const shown = (key: string) => /^(name|speed_limit|groups|area)(\/|$)/.test(key)
  const holes = geofence?.area.type === 'Polygon' && geofence.area.coordinates.length > 1

  return (
    <Dialog title={geofence ? g.editTitle(geofence.name) : g.add} onClose={onClose} wide>
      <form ref={save.form} onSubmit={submit} noValidate aria-busy={save.busy.value} class="admin-form gf-form">
        <FormAlert failure={save.failure.value} shown={shown} />
        <div class="form-grid">
          <TextField id="gf-name" label={g.name} value={v.name} onInput={set('name', 'name')} error={save.error('name')} hint={g.nameHint} required autofocus maxLength={100} />
          <TextField
            id="gf-speed-limit"
            label={g.speedLimitLabel}
            value={v.speedLimit}
            onInput={set('speedLimit', 'speed_limit')}
            error={save.error('speed_limit')}
            hint={g.speedLimitHint}
            inputMode="numeric"
          />
        </div>

        <fieldset class={areaError ? 'gf-area invalid' : 'gf-area'} aria-describedby={areaError ? 'gf-area-error' : undefined}>
          <legend>{g.area}</legend>
          <ChoiceField
            id="gf-shape"
            label={strings.geofences.colShape}
            value={draft.shape}
            onChange={(shape) => change((d) => ({ ...d, shape: shape as Shape }))}
            options={[
              { value: 'Circle', label: g.shapeCircle, detail: g.shapeCircleDetail },
              { value: 'Polygon', label: g.shapePolygon, detail: g.shapePolygonDetail },
            ]}
          />
          <p class="hint" id="gf-map-help">
            {draft.shape === 'Circle' ? g.circleHelp : g.polygonHelp} {g.keyboardHelp}
          </p>
          {areaError && (
            <p id="gf-area-error" class="field-error">
              {areaError}
            </p>
          )}
          <div class="gf-map-wrap">
            <div
              ref={mapRef}
              class="gf-map"
              role="application"
              aria-label={g.mapLabel}
              aria-describedby={areaError ? 'gf-area-error gf-map-help' : 'gf-map-help'}
              aria-invalid={areaError ? 'true' : undefined}
              data-shape={draft.shape}
            />
            <span class="gf-cross" aria-hidden="true" />
          </div>
          {draft.shape === 'Circle' ? (
            <div class="gf-tools">
              <div class={radiusError ? 'field invalid gf-radius' : 'field gf-radius'}>
                <label for="gf-radius">{g.radius}</label>
                <input
                  id="gf-radius"
                  type="number"
                  inputMode="numeric"
                  min={10}
                  max={100000}
                  step={1}
                  value={draft.circle.radius}
                  onInput={(e) => {
                    const radius = e.currentTarget.value
                    change((d) => ({ ...d, circle: { ...d.circle, radius } }))
                    save.edited('area/radius')
                    clearTimeout(radiusTimer.current)
                    radiusTimer.current = setTimeout(() => editor.current?.showCircle(), RADIUS_SETTLE_MS)
                  }}
                  aria-invalid={radiusError ? 'true' : undefined}
                  aria-describedby={radiusError ? 'gf-radius-error gf-radius-hint' : 'gf-radius-hint'}
                />
                {radiusError && (
                  <p id="gf-radius-error" class="field-error">
                    {radiusError}
                  </p>
                )}
                <p id="gf-radius-hint" class="hint">
                  {g.radiusHint}
                </p>
              </div>
              <button type="button" onClick={placeAtCross}>
                {g.centreHere}
              </button>
            </div>
          ) : (
            <div class="gf-tools">
              <span class="gf-count" role="status">
                {g.corners(corners, draft.polygon.closed)}
              </span>
              <button type="button" onClick={placeAtCross} disabled={draft.polygon.closed}>
                {g.addCorner}
              </button>
              <button
                type="button"
                disabled={corners === 0}
                onClick={() => change((d) => ({ ...d, polygon: { points: d.polygon.closed ? d.polygon.points : d.polygon.points.slice(0, -1), closed: false } }))}
              >
                {g.undoCorner}
              </button>
              <button type="button" disabled={corners < 3 || draft.polygon.closed} onClick={() => change((d) => ({ ...d, polygon: { ...d.polygon, closed: true } }))}>
                {g.finish}
              </button>
              <button type="button" disabled={corners === 0} onClick={() => change((d) => ({ ...d, polygon: { points: [], closed: false } }))}>
                {g.startOver}
              </button>
            </div>
          )}
          {holes && areaChanged && <p class="hint">{g.holesDropped}</p>}
        </fieldset>

        {groupsReady ? (
          store.groups.items.length > 0 ? (
            <PickList
              id="gf-groups"
              label={g.groups}
              options={store.groups.items.map((group) => ({ id: group.id, label: group.name }))}
              selected={v.groups.filter((id) => store.groupName(id) !== null)}
              onChange={set('groups', 'groups')}
              error={save.error('groups')}
              hint={g.groupsHint}
              empty={g.noGroups}
            />
          ) : (
            <p class="hint">{g.noGroups}</p>
          )
        ) : (
          <Pending state={store.groups.state.value} onRetry={() => void store.groups.refresh()} />
        )}
        <FormButtons busy={save.busy.value} save={geofence ? s.save : g.add} onCancel={onClose} />
      </form>
    </Dialog>
  )
}
