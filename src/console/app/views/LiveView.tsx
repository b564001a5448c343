import { effect, useComputed, useSignal } from '@preact/signals'
import { useEffect, useRef } from 'preact/hooks'
import { filtering, groupId, groups, loadGroups, predicate, query, resetFilters, stateFilter } from '../filters'
import { adminHref } from '../admin'
import type { Fleet } from '../fleet'
import { geofencesShown, loadGeofences, showGeofences } from '../geofenceOverlay'
import { FleetMap, STATE_GLYPH } from '../map'
import { deviceHref, go } from '../router'
import { strings } from '../strings'
import { DeviceList } from './DeviceList'
import { DevicePanel } from './DevicePanel'

const FILTER_STATES = ['moving', 'stopped', 'off', 'new', 'stolen', 'suspended'] as const

/** The live map and list: every device you reach, moved by the live stream. */
export function LiveView({ fleet, selected, isAdmin }: { fleet: Fleet; selected: string | null; isAdmin: boolean }) {
  const mapRef = useRef<HTMLDivElement>(null)
  const fleetMap = useRef<FleetMap | null>(null)
  const geofenceCount = useSignal(0)

  useEffect(() => {
    void loadGroups()
    const body = document.body.dataset
    const map = new FleetMap(mapRef.current!, fleet, {
      tileUrl: body.tileUrl ?? '',
      attribution: body.tileAttribution ?? '',
      onSelect: (id) => go(deviceHref(id)),
    })
    fleetMap.current = map
    const stopUpdates = effect(() => {
      fleet.version.value
      map.update()
    })
    const stopFilter = effect(() => map.setFilter(predicate.value))
    const observer = new ResizeObserver(() => map.resize())
    observer.observe(mapRef.current!)
    // read at each visit: an admin may have changed them meanwhile; without them the map works all the same
    const abort = new AbortController()
    loadGeofences(abort.signal).then(
      (list) => {
        map.geofences.set(list)
        geofenceCount.value = list.length
      },
      () => {},
    )
    const stopGeofences = effect(() => map.geofences.show(geofencesShown.value))
    return () => {
      abort.abort()
      stopGeofences()
      stopUpdates()
      stopFilter()
      observer.disconnect()
      map.destroy()
      fleetMap.current = null
    }
  }, [fleet])

  const filtered = useComputed(() => {
    fleet.version.value
    return fleet.order.filter(predicate.value)
  })
  // a device opened by its address is selected once the list has brought it
  const known = selected !== null && filtered.value !== null && fleet.devices.has(selected)
  useEffect(() => {
    fleetMap.current?.select(selected)
  }, [selected, known])
  const total = fleet.order.length
  const live = fleet.live.value

  return (
    <main id="content" class="live" tabIndex={-1}>
      <section class="sidebar" aria-label={selected ? strings.details : strings.listLabel}>
        {selected ? (
          <DevicePanel fleet={fleet} id={selected} />
        ) : (
          <>
            <div class="filters">
              <div class="field grow">
                <label for="filter-search">{strings.search}</label>
                <input
                  id="filter-search"
                  type="search"
                  placeholder={strings.searchPlaceholder}
                  value={query.value}
                  onInput={(e) => (query.value = e.currentTarget.value)}
                />
              </div>
              {groups.value.length > 0 && (
                <div class="field">
                  <label for="filter-group">{strings.group}</label>
                  <select id="filter-group" value={groupId.value} onChange={(e) => (groupId.value = e.currentTarget.value)}>
                    <option value="">{strings.allGroups}</option>
                    {groups.value.map((g) => (
                      <option key={g.id} value={g.id}>
                        {g.name}
                      </option>
                    ))}
                  </select>
                </div>
              )}
              <div class="field">
                <label for="filter-state">{strings.state}</label>
                <select id="filter-state" value={stateFilter.value} onChange={(e) => (stateFilter.value = e.currentTarget.value)}>
                  <option value="">{strings.allStates}</option>
                  {FILTER_STATES.map((s) => (
                    <option key={s} value={s}>
                      {strings.states[s]}
                    </option>
                  ))}
                </select>
              </div>
            </div>
            <div class="list-head">
              <span class="count" role="status">
                {fleet.loading.value ? strings.loadingDevices(fleet.loaded.value) : strings.shownOfTotal(filtered.value.length, total)}
              </span>
              {filtering.value && (
                <button type="button" class="link" onClick={resetFilters}>
                  {strings.clearFilters}
                </button>
              )}
              <span class={`live-status ${live}`} role="status">
                {live === 'live' ? strings.live : live === 'connecting' ? strings.connecting : strings.reconnecting}
              </span>
            </div>
            {fleet.loadError.value && (
              <p class="alert" role="alert">
                {fleet.loadError.value}
              </p>
            )}
            {!fleet.loading.value && total === 0 && !fleet.loadError.value &&
              (isAdmin ? (
                <p class="empty">
                  {strings.noDevicesAdmin} <a href={adminHref('devices')}>{strings.noDevicesAdminLink}</a>
                </p>
              ) : (
                <p class="empty">{strings.noDevices}</p>
              ))}
            {total > 0 && filtered.value.length === 0 && <p class="empty">{strings.noMatch}</p>}
            <DeviceList devices={filtered.value} />
          </>
        )}
      </section>
      <div class="map-wrap">
        <div ref={mapRef} class="map" role="region" aria-label={strings.mapLabel} />
        <div class="map-tools">
          <button type="button" onClick={() => fleetMap.current?.fitAll()}>
            {strings.fitAll}
          </button>
          {geofenceCount.value > 0 && (
            <label class="map-toggle">
              <input type="checkbox" checked={geofencesShown.value} onChange={(e) => showGeofences(e.currentTarget.checked)} />
              {strings.geofences.toggle}
            </label>
          )}
        </div>
        <details class="legend">
          <summary>{strings.legend}</summary>
          <ul>
            {FILTER_STATES.map((s) => (
              <li key={s}>
                <span class={`mk state-${s} legend-mk`} aria-hidden="true">
                  {s === 'moving' && <span class="mk-arrow" />}
                  <span class="mk-dot">{STATE_GLYPH[s]}</span>
                </span>
                <span class="legend-text">{strings.states[s]}</span>
              </li>
            ))}
            {geofenceCount.value > 0 && (
              <>
                <li>
                  <span class="legend-geofence" aria-hidden="true" />
                  <span class="legend-text">{strings.geofences.legendArea}</span>
                </li>
                <li>
                  <span class="gf-limit legend-limit" aria-hidden="true">
                    50
                  </span>
                  <span class="legend-text">{strings.geofences.legendLimit}</span>
                </li>
              </>
            )}
          </ul>
        </details>
      </div>
    </main>
  )
}
