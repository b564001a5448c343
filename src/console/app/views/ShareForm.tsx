import { useSignal } from '@preact/signals'
import { ApiError } from '../api'
import type { Fleet, FleetDevice } from '../fleet'
import { createLink, customTtlSeconds, MAX_DEVICES, PERMISSIONS, TTL_PRESETS_S, TTL_UNITS_S, type TtlUnit } from '../share'
import { strings } from '../strings'
import type { ShareCreated } from '../types'

/** Matches drawn at once: a fleet of 10,000 is searched, not scrolled. */
const SHOWN_MAX = 100

const plateOf = (device: FleetDevice) => (typeof device.body.properties?.plate === 'string' ? device.body.properties.plate : '')

/** The new-link form: devices (searched among those the person reaches), an expiry, the permissions. */
export function ShareForm({ fleet, onCreated }: { fleet: Fleet; onCreated: (link: ShareCreated) => void }) {
  // the devices as their pages load (not every live fix: a name or a plate does not move)
  fleet.loaded.value
  fleet.loading.value
  const query = useSignal('')
  const chosen = useSignal<string[]>([])
  const ttl = useSignal<number | 'custom'>(TTL_PRESETS_S[1])
  const customAmount = useSignal('2')
  const customUnit = useSignal<TtlUnit>('hours')
  const acl = useSignal<string[]>(PERMISSIONS.map((p) => p.id))
  const busy = useSignal(false)
  const error = useSignal<string | null>(null)

  const text = query.value.trim().toLowerCase().replace(/\s+/g, ' ')
  const matches = text === '' ? fleet.order : fleet.order.filter((d) => d.haystack.includes(text))
  const shown = matches.slice(0, SHOWN_MAX)
  const chosenSet = new Set(chosen.value)
  const ttlSeconds = ttl.value === 'custom' ? customTtlSeconds(customAmount.value, customUnit.value) : ttl.value

  function toggle(id: string, on: boolean) {
    error.value = null
    chosen.value = on ? [...chosen.value.filter((c) => c !== id), id] : chosen.value.filter((c) => c !== id)
  }

  function chooseShown() {
    error.value = null
    const add = shown.map((d) => d.id).filter((id) => !chosenSet.has(id))
    chosen.value = [...chosen.value, ...add]
  }

  async function submit(event: Event) {
    event.preventDefault()
    error.value = null
    if (chosen.value.length === 0) return void (error.value = strings.shareNeedDevice)
    if (chosen.value.length > MAX_DEVICES) return void (error.value = strings.shareTooMany(MAX_DEVICES))
    if (ttlSeconds === null) return void (error.value = strings.shareNeedTtl)
    if (acl.value.length === 0) return void (error.value = strings.shareNeedPermission)
    busy.value = true
    try {
      // the permissions in the table's order, whatever order they were ticked in
      const created = await createLink({ devices: chosen.value, ttl: ttlSeconds, acl: PERMISSIONS.map((p) => p.id).filter((id) => acl.value.includes(id)) })
      chosen.value = []
      query.value = ''
      onCreated(created)
    } catch (failure) {
      error.value = failure instanceof ApiError ? (failure.problem?.detail ?? failure.message) : strings.networkDown
    } finally {
      busy.value = false
    }
  }

  const aliasOf = (id: string) => fleet.devices.get(id)?.body.alias ?? id
  const CHIPS_MAX = 12

  return (
    <form class="share-form" onSubmit={(e) => void submit(e)} noValidate>
      <fieldset class="share-fieldset">
        <legend>{strings.shareDevices}</legend>
        <p class="share-chosen-count" aria-live="polite">
          {strings.shareSelected(chosen.value.length)}
        </p>
        {chosen.value.length > 0 && (
          <ul class="share-chips" aria-label={strings.shareSelected(chosen.value.length)}>
            {chosen.value.slice(0, CHIPS_MAX).map((id) => (
              <li key={id}>
                <span>{aliasOf(id)}</span>
                <button type="button" class="share-chip-remove" aria-label={strings.shareRemove(aliasOf(id))} title={strings.shareRemove(aliasOf(id))} onClick={() => toggle(id, false)}>
                  ×
                </button>
              </li>
            ))}
            {chosen.value.length > CHIPS_MAX && <li class="muted">{strings.shareAndMore(chosen.value.length - CHIPS_MAX)}</li>}
          </ul>
        )}
        <div class="field">
          <label for="share-search">{strings.shareSearch}</label>
          <input
            id="share-search"
            type="search"
            placeholder={strings.shareSearchPlaceholder}
            autocomplete="off"
            value={query.value}
            onInput={(e) => (query.value = e.currentTarget.value)}
          />
        </div>
        <div class="share-picks">
          {fleet.loading.value && fleet.order.length === 0 ? (
            <p class="muted small">{strings.loadingDevices(fleet.loaded.value)}</p>
          ) : fleet.order.length === 0 ? (
            <p class="muted small">{strings.shareNoDevices}</p>
          ) : shown.length === 0 ? (
            <p class="muted small">{strings.shareNoMatch}</p>
          ) : (
            <ul>
              {shown.map((device) => {
                const plate = plateOf(device)
                return (
                  <li key={device.id}>
                    <label class="share-pick" data-device={device.id}>
                      <input type="checkbox" checked={chosenSet.has(device.id)} onChange={(e) => toggle(device.id, e.currentTarget.checked)} />
                      <span class="share-pick-alias">{device.body.alias}</span>
                      {plate && <span class="share-pick-sub">{plate}</span>}
                    </label>
                  </li>
                )
              })}
            </ul>
          )}
        </div>
        <div class="share-pick-tools">
          {matches.length > shown.length && <p class="muted small">{strings.shareShownOf(shown.length, matches.length)}</p>}
          {shown.some((d) => !chosenSet.has(d.id)) && (
            <button type="button" class="link" onClick={chooseShown}>
              {strings.shareSelectShown(shown.length)}
            </button>
          )}
          {chosen.value.length > 0 && (
            <button type="button" class="link" onClick={() => (chosen.value = [])}>
              {strings.shareClearChoice}
            </button>
          )}
        </div>
      </fieldset>

      <fieldset class="share-fieldset">
        <legend>{strings.shareExpiry}</legend>
        <div class="share-ttl">
          {TTL_PRESETS_S.map((seconds) => (
            <label key={seconds} class="share-ttl-option">
              <input type="radio" name="share-ttl" value={seconds} checked={ttl.value === seconds} onChange={() => ((ttl.value = seconds), (error.value = null))} />
              <span>{strings.sharePreset(seconds)}</span>
            </label>
          ))}
          <label class="share-ttl-option">
            <input type="radio" name="share-ttl" value="custom" checked={ttl.value === 'custom'} onChange={() => ((ttl.value = 'custom'), (error.value = null))} />
            <span>{strings.shareCustom}</span>
          </label>
        </div>
        {ttl.value === 'custom' && (
          <div class="share-custom">
            <div class="field">
              <label for="share-custom-amount">{strings.shareCustomAmount}</label>
              <input
                id="share-custom-amount"
                type="number"
                inputMode="numeric"
                min={1}
                step={1}
                value={customAmount.value}
                aria-invalid={ttlSeconds === null}
                aria-describedby="share-custom-help"
                onInput={(e) => ((customAmount.value = e.currentTarget.value), (error.value = null))}
              />
            </div>
            <div class="field">
              <label for="share-custom-unit">{strings.shareCustomUnit}</label>
              <select id="share-custom-unit" value={customUnit.value} onChange={(e) => ((customUnit.value = e.currentTarget.value as TtlUnit), (error.value = null))}>
                {Object.keys(TTL_UNITS_S).map((unit) => (
                  <option key={unit} value={unit}>
                    {strings.shareUnits[unit]}
                  </option>
                ))}
              </select>
            </div>
            <p id="share-custom-help" class={ttlSeconds === null ? 'share-invalid small' : 'muted small'}>
              {strings.shareCustomBounds}
            </p>
          </div>
        )}
      </fieldset>

      <fieldset class="share-fieldset">
        <legend>{strings.sharePermissions}</legend>
        <ul class="share-acl">
          {PERMISSIONS.map((permission) => (
            <li key={permission.id}>
              <label class="share-acl-option">
                <input
                  type="checkbox"
                  name="share-acl"
                  value={permission.id}
                  checked={acl.value.includes(permission.id)}
                  onChange={(e) => {
                    error.value = null
                    acl.value = e.currentTarget.checked ? [...acl.value, permission.id] : acl.value.filter((id) => id !== permission.id)
                  }}
                />
                <span>
                  <span class="share-acl-name">{strings.sharePermission[permission.name]}</span>
                  <span class="share-acl-help">{strings.sharePermissionHelp[permission.name]}</span>
                </span>
              </label>
            </li>
          ))}
        </ul>
      </fieldset>

      {error.value && (
        <p class="alert" role="alert">
          {error.value}
        </p>
      )}
      <button type="submit" class="primary share-create" disabled={busy.value}>
        {busy.value ? strings.shareCreating : strings.shareCreate}
      </button>
    </form>
  )
}
