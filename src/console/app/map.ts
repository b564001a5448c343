/**
 * The live map: Leaflet for the map, supercluster for the clusters. Only what is in view is in
 * the page (the clusters and single markers supercluster gives for the view and the zoom), so ten
 * thousand devices cost no more to pan than a hundred. A live fix moves a single marker where it
 * is at once; clusters are counted again at most every `rebuildMs` (a whole index per fix would
 * not keep up with a large fleet reporting every few seconds).
 */
import L from 'leaflet'
import Supercluster, { type PointFeature } from 'supercluster'
import type { Fleet, FleetDevice } from './fleet'
import { GeofenceOverlay } from './geofenceOverlay'
import { removeMap } from './mapTeardown'
import { strings } from './strings'

interface DeviceMarker {
  marker: L.Marker
  root: HTMLElement
  arrow: HTMLElement
  label: HTMLElement
  /** what the element shows now, to touch the DOM only on a change */
  shown: { state: string; course: number | null | undefined; alias: string; selected: boolean }
}

/** Zoom from which every device is drawn on its own. */
const CLUSTER_MAX_ZOOM = 15
/** Leaflet's tiles are 256 px: the radius (px) keeps the largest cluster icon (54 px) clear of the next. */
const CLUSTER_OPTIONS = { radius: 64, extent: 256, maxZoom: CLUSTER_MAX_ZOOM }
/** Show names beside markers while at most this many are on screen. */
const MAX_LABELS = 30

function element(tag: string, className: string, text?: string): HTMLElement {
  const el = document.createElement(tag)
  el.className = className
  if (text !== undefined) el.textContent = text
  return el
}

/** the glyph inside a marker, so that the state does not rest on colour alone */
export const STATE_GLYPH: Record<string, string> = { moving: '', stopped: 'P', off: '', new: '+', stolen: '!', suspended: '‖', unlink: '×' }

export interface FleetMapOptions {
  tileUrl: string
  attribution: string
  onSelect(id: string): void
}

// Room kept around the fleet when the map fits it, in pixels, so that no marker is cut at the edge
// or hidden on a phone: the zoom buttons on the left, "Fit all" at the top, a marker's name label
// to its right, the legend's corner at the bottom.
const FIT_PADDING_TOP_LEFT: L.PointExpression = [52, 56]
const FIT_PADDING_BOTTOM_RIGHT: L.PointExpression = [120, 60]

export class FleetMap {
  readonly map: L.Map
  /** the account's geofences, under the markers */
  readonly geofences: GeofenceOverlay
  private index = new Supercluster<{ id: string }>(CLUSTER_OPTIONS)
  private deviceMarkers = new Map<string, DeviceMarker>()
  private clusterMarkers = new Map<string, L.Marker>()
  private filter: (device: FleetDevice) => boolean = () => true
  private selected: string | null = null
  private rebuildTimer: ReturnType<typeof setTimeout> | undefined
  private rebuildUrgent = false
  private lastRebuild = 0
  private fitted = false
  /** the person moved the map: a change of layout no longer refits it */
  private userMoved = false
  private moving = false
  /** whether the first markers, and then the whole fleet, have been drawn (marked for benchmarks) */
  private firstDrawn = false
  private fleetDrawn = false

  constructor(
    container: HTMLElement,
    private readonly fleet: Fleet,
    private readonly options: FleetMapOptions,
  ) {
    this.map = L.map(container, { worldCopyJump: true, zoomControl: true }).setView([30, 0], 2)
    // Offline, tiles fail to load: Leaflet fires `tileerror` and the markers draw all the same.
    L.tileLayer(options.tileUrl, { maxZoom: 19, attribution: options.attribution }).addTo(this.map)
    this.map.on('moveend', () => this.render())
    this.map.on('movestart', () => {
      if (!this.moving) this.userMoved = true
    })
    this.map.attributionControl.setPrefix(false)
    this.geofences = new GeofenceOverlay(this.map)
  }

  private get rebuildMs(): number {
    return this.fleet.order.length > 2000 ? 2000 : 250
  }

  /** what to draw: the list's filters apply to the map too */
  setFilter(filter: (device: FleetDevice) => boolean) {
    this.filter = filter
    this.rebuild()
  }

  /** after the fleet's version moved */
  update() {
    const { moved, reshaped } = this.fleet.takeChanges()
    for (const id of moved) {
      const drawn = this.deviceMarkers.get(id)
      const device = this.fleet.devices.get(id)
      if (drawn && device && device.latitude !== null) {
        drawn.marker.setLatLng([device.latitude, device.longitude!])
        this.paint(drawn, device)
      }
    }
    // while pages are still coming, the first is drawn at once and the rest together at the end
    if (reshaped || moved.size > 0) this.scheduleRebuild(reshaped && (!this.firstDrawn || !this.fleet.loading.value))
  }

  /** Devices that came or went are drawn at once; devices that only moved wait for the next count of the clusters. */
  private scheduleRebuild(urgent: boolean) {
    if (this.rebuildTimer !== undefined) {
      if (!urgent || this.rebuildUrgent) return
      clearTimeout(this.rebuildTimer)
    }
    this.rebuildUrgent = urgent
    const wait = urgent ? 0 : Math.max(0, this.lastRebuild + this.rebuildMs - performance.now())
    this.rebuildTimer = setTimeout(() => {
      this.rebuildTimer = undefined
      this.rebuildUrgent = false
      this.rebuild()
    }, wait)
  }

  private rebuild() {
    this.lastRebuild = performance.now()
    const points: PointFeature<{ id: string }>[] = []
    for (const device of this.fleet.order) {
      if (device.latitude === null || !this.filter(device)) continue
      points.push({ type: 'Feature', properties: { id: device.id }, geometry: { type: 'Point', coordinates: [device.longitude!, device.latitude] } })
    }
    this.index = new Supercluster<{ id: string }>(CLUSTER_OPTIONS).load(points)
    if (!this.fitted && !this.fleet.loading.value) {
      this.fitted = true
      this.fitAll(false)
    }
    this.render()
  }

  /** Draws the clusters and markers of the current view, reusing what is already drawn. */
  private render() {
    const bounds = this.map.getBounds().pad(0.25)
    const zoom = Math.round(this.map.getZoom())
    const features = this.index.getClusters([bounds.getWest(), Math.max(-85, bounds.getSouth()), bounds.getEast(), Math.min(85, bounds.getNorth())], zoom)
    const wantDevices = new Set<string>()
    const wantClusters = new Set<string>()
    for (const feature of features) {
      const [longitude, latitude] = feature.geometry.coordinates
      const props = feature.properties as { id?: string; cluster?: boolean; cluster_id?: number; point_count?: number }
      if (props.cluster) {
        const key = `${props.cluster_id}:${props.point_count}:${latitude}:${longitude}`
        wantClusters.add(key)
        if (!this.clusterMarkers.has(key)) this.clusterMarkers.set(key, this.clusterMarker(props.cluster_id!, props.point_count!, latitude, longitude).addTo(this.map))
      } else {
        const device = this.fleet.devices.get(props.id!)
        if (!device) continue
        wantDevices.add(device.id)
        const drawn = this.deviceMarkers.get(device.id)
        if (drawn) {
          drawn.marker.setLatLng([latitude, longitude])
          this.paint(drawn, device)
        } else {
          this.deviceMarkers.set(device.id, this.deviceMarker(device))
        }
      }
    }
    for (const [key, marker] of this.clusterMarkers) {
      if (wantClusters.has(key)) continue
      marker.remove()
      this.clusterMarkers.delete(key)
    }
    for (const [id, drawn] of this.deviceMarkers) {
      if (wantDevices.has(id)) continue
      drawn.marker.remove()
      this.deviceMarkers.delete(id)
    }
    this.map.getContainer().classList.toggle('labels', this.deviceMarkers.size <= MAX_LABELS)
    if (!this.firstDrawn && features.length > 0) {
      this.firstDrawn = true
      performance.mark('console:first-draw')
    }
    if (!this.fleetDrawn && !this.fleet.loading.value) {
      this.fleetDrawn = true
      performance.mark('console:fleet-drawn')
    }
  }

  private clusterMarker(clusterId: number, count: number, latitude: number, longitude: number): L.Marker {
    const size = count < 10 ? 34 : count < 100 ? 40 : count < 1000 ? 46 : 54
    const root = element('div', 'mk-cluster', count >= 1000 ? `${Number((count / 1000).toFixed(count < 10_000 ? 1 : 0))}k` : String(count))
    const marker = L.marker([latitude, longitude], {
      icon: L.divIcon({ html: root, className: 'mk-cluster-icon', iconSize: [size, size], iconAnchor: [size / 2, size / 2] }),
      title: strings.cluster(count),
      keyboard: true,
    })
    const open = () => {
      const zoom = Math.min(this.index.getClusterExpansionZoom(clusterId), CLUSTER_MAX_ZOOM + 1)
      this.map.setView([latitude, longitude], zoom)
      this.userMoved = true
    }
    marker.on('click', open)
    marker.on('add', () => marker.getElement()?.addEventListener('keydown', (e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), open())))
    return marker
  }

  private deviceMarker(device: FleetDevice): DeviceMarker {
    const root = element('div', 'mk')
    const arrow = element('span', 'mk-arrow')
    const dot = element('span', 'mk-dot')
    const label = element('span', 'mk-label', device.body.alias)
    root.append(arrow, dot, label)
    const marker = L.marker([device.latitude!, device.longitude!], {
      icon: L.divIcon({ html: root, className: 'mk-icon', iconSize: [28, 28], iconAnchor: [14, 14] }),
      title: device.body.alias,
      keyboard: true,
      riseOnHover: true,
    })
    marker.on('click', () => this.options.onSelect(device.id))
    marker.on('add', () => {
      const el = marker.getElement()
      el?.setAttribute('data-device', device.id)
      el?.addEventListener('keydown', (e) => {
        if (e.key !== 'Enter' && e.key !== ' ') return
        e.preventDefault()
        this.options.onSelect(device.id)
      })
    })
    const drawn: DeviceMarker = { marker, root, arrow, label, shown: { state: '', course: undefined, alias: '', selected: false } }
    this.paint(drawn, device)
    marker.addTo(this.map)
    return drawn
  }

  /** brings a marker's element in line with its device */
  private paint(drawn: DeviceMarker, device: FleetDevice) {
    const { shown } = drawn
    const course = device.fix?.course ?? null
    const selected = this.selected === device.id
    if (shown.state !== device.state) {
      drawn.root.className = `mk state-${device.state}`
      ;(drawn.root.children[1] as HTMLElement).textContent = STATE_GLYPH[device.state] ?? ''
      shown.state = device.state
      drawn.root.classList.toggle('selected', selected)
      shown.selected = selected
    }
    if (shown.selected !== selected) {
      drawn.root.classList.toggle('selected', selected)
      drawn.marker.setZIndexOffset(selected ? 1000 : 0)
      shown.selected = selected
    }
    if (shown.course !== course) {
      drawn.arrow.hidden = course === null
      if (course !== null) drawn.arrow.style.transform = `rotate(${Math.round(course)}deg)`
      drawn.root.dataset.course = course === null ? '' : String(Math.round(course))
      shown.course = course
    }
    if (shown.alias !== device.body.alias) {
      drawn.label.textContent = device.body.alias
      shown.alias = device.body.alias
    }
  }

  /** moves the map on the console's own account (not the person's) */
  private view(move: () => void) {
    this.moving = true
    try {
      move()
    } finally {
      this.moving = false
    }
  }

  select(id: string | null) {
    const before = this.selected
    this.selected = id
    for (const key of [before, id]) {
      const drawn = key ? this.deviceMarkers.get(key) : undefined
      const device = key ? this.fleet.devices.get(key) : undefined
      if (drawn && device) this.paint(drawn, device)
    }
    const device = id ? this.fleet.devices.get(id) : undefined
    if (!device || device.latitude === null) return
    const at = L.latLng(device.latitude, device.longitude!)
    // on its own and in view: leave the zoom as it is
    if (this.deviceMarkers.has(device.id) && this.map.getBounds().pad(-0.1).contains(at)) return
    this.view(() => this.map.setView(at, Math.max(this.map.getZoom(), this.deviceMarkers.has(device.id) ? 0 : CLUSTER_MAX_ZOOM + 1)))
  }

  fitAll(animate = true) {
    const bounds = L.latLngBounds([])
    for (const device of this.fleet.order) if (device.latitude !== null && this.filter(device)) bounds.extend([device.latitude, device.longitude!])
    if (!bounds.isValid()) return
    this.view(() => this.map.fitBounds(bounds, { paddingTopLeft: FIT_PADDING_TOP_LEFT, paddingBottomRight: FIT_PADDING_BOTTOM_RIGHT, maxZoom: 15, animate }))
    this.userMoved = false
  }

  /** The map's size changed (the layout moved: a phone turned, a window resized): the selected device, or else the fleet, stays in view unless the person moved the map. */
  resize() {
    this.view(() => this.map.invalidateSize({ pan: false }))
    const device = this.selected ? this.fleet.devices.get(this.selected) : undefined
    if (device && device.latitude !== null) {
      const at = L.latLng(device.latitude, device.longitude!)
      if (!this.map.getBounds().pad(-0.1).contains(at)) this.view(() => this.map.panTo(at, { animate: false }))
    } else if (this.fitted && !this.userMoved) this.fitAll()
  }

  destroy() {
    clearTimeout(this.rebuildTimer)
    this.geofences.destroy()
    removeMap(this.map)
  }
}
