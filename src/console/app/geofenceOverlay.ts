/**
 * The account's geofences on the live map: their areas under the device markers (a pane between
 * the tiles and the markers), each with its name and, when it has one, its speed limit as a
 * road sign. Nothing here takes a click or the focus: the markers above stay what a person
 * clicks and tabs through. Names are shown while few geofences are in view (as device names are).
 */
import { signal } from '@preact/signals'
import L from 'leaflet'
import { listAll } from './admin'
import { areaCentre, areaLayers } from './geofenceShapes'
import { strings } from './strings'
import type { Geofence } from './types'

const SHOWN_KEY = 'console:geofences-shown'

/** whether the live map draws the geofences: the person's choice, kept for the browser tab's session */
export const geofencesShown = signal(readShown())

function readShown(): boolean {
  try {
    return sessionStorage.getItem(SHOWN_KEY) !== 'no'
  } catch {
    return true // storage refused (a privacy setting): shown, and the choice lasts while the page does
  }
}

export function showGeofences(shown: boolean): void {
  geofencesShown.value = shown
  try {
    sessionStorage.setItem(SHOWN_KEY, shown ? 'yes' : 'no')
  } catch {
    // kept in the page only
  }
}

/** every geofence of the account (any user reads them: they are the account's map) */
export const loadGeofences = (abort?: AbortSignal) => listAll<Geofence>('geofences', abort)

/** Show names while at most this many geofences have their label in view. */
const MAX_LABELS = 40

const AREA_STYLE: L.PathOptions = { pane: 'geofences', interactive: false, color: '#6a3aa6', weight: 2, opacity: 0.85, fillColor: '#8e5cc9', fillOpacity: 0.12 }

/** a geofence's label: its name, and its speed limit as a round sign */
export function geofenceLabel(geofence: Pick<Geofence, 'name' | 'speed_limit'>): HTMLElement {
  const root = document.createElement('span')
  root.className = 'gf-label'
  const name = document.createElement('span')
  name.className = 'gf-name'
  name.textContent = geofence.name
  root.append(name)
  if (geofence.speed_limit !== null) {
    const sign = document.createElement('span')
    sign.className = 'gf-limit'
    sign.textContent = String(Math.round(geofence.speed_limit))
    sign.setAttribute('aria-hidden', 'true')
    // what the sign means, for a screen reader reading the map's text
    const words = document.createElement('span')
    words.className = 'visually-hidden'
    words.textContent = strings.geofences.speedLimit(geofence.speed_limit)
    root.append(sign, words)
  }
  return root
}

export class GeofenceOverlay {
  private readonly areas = L.layerGroup()
  private readonly labels = L.layerGroup()
  private centres: L.LatLng[] = []
  private visible = true

  constructor(private readonly map: L.Map) {
    // above the tiles (200), under Leaflet's own overlays (400) and the markers (600)
    map.createPane('geofences').style.zIndex = '350'
    const labelPane = map.createPane('geofence-labels')
    labelPane.style.zIndex = '450'
    labelPane.style.pointerEvents = 'none'
    this.map.on('moveend', this.placeLabels)
  }

  set(geofences: readonly Geofence[]): void {
    this.areas.clearLayers()
    this.labels.clearLayers()
    this.centres = []
    for (const geofence of geofences) {
      for (const layer of areaLayers(geofence.area, AREA_STYLE)) {
        layer.on('add', () => {
          const path = (layer as L.Path & { getElement(): Element | undefined }).getElement()
          path?.setAttribute('data-geofence', geofence.id)
        })
        this.areas.addLayer(layer)
      }
      const centre = L.latLng(areaCentre(geofence.area))
      this.centres.push(centre)
      const label = L.marker(centre, {
        pane: 'geofence-labels',
        interactive: false,
        keyboard: false,
        icon: L.divIcon({ html: geofenceLabel(geofence), className: 'gf-label-icon', iconSize: [0, 0] }),
      })
      label.on('add', () => label.getElement()?.setAttribute('data-geofence', geofence.id))
      this.labels.addLayer(label)
    }
    this.show(this.visible)
  }

  show(visible: boolean): void {
    this.visible = visible
    for (const group of [this.areas, this.labels]) {
      if (visible && !this.map.hasLayer(group)) group.addTo(this.map)
      else if (!visible && this.map.hasLayer(group)) group.remove()
    }
    this.placeLabels()
  }

  /** names only while few are in view: hundreds of names would hide the map */
  private readonly placeLabels = () => {
    const bounds = this.map.getBounds()
    let inView = 0
    for (const centre of this.centres) if (bounds.contains(centre) && ++inView > MAX_LABELS) break
    this.map.getContainer().classList.toggle('gf-labels', inView <= MAX_LABELS)
  }

  destroy(): void {
    this.map.off('moveend', this.placeLabels)
    this.areas.remove()
    this.labels.remove()
  }
}
