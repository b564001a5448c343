/**
 * Drawing a geofence's area on a Leaflet map, by hand (a drawing library would weigh more than
 * the two shapes need): a circle is a centre clicked or dragged and a radius typed or dragged by a
 * handle on its edge; a polygon is corners clicked in order, closed by clicking the first one,
 * each corner draggable. The form owns the shape (`draw` shows it); this only reports what the
 * person did. While a handle is dragged the map moves it itself and the form's redraws wait, so a
 * drag is never cut short by a redraw.
 *
 * The map does not jump between world copies (no worldCopyJump), so corners clicked on either side
 * of the antimeridian keep continuous longitudes (179.5, 180.5); `toArea` wraps them into
 * -180..180 for the API, which reads such an edge the short way round.
 */
import L from 'leaflet'
import { areaLayers, unwrapRing, wrapLongitude } from './geofenceShapes'
import { removeMap } from './mapTeardown'
import { strings } from './strings'
import type { Geofence, GeofenceArea } from './types'

const s = strings.geofences

export type Shape = 'Circle' | 'Polygon'

export interface CircleDraft {
  centre: L.LatLng | null
  /** as typed in the radius field */
  radius: string
}

export interface PolygonDraft {
  /** in the order clicked; the closing corner is not repeated */
  points: L.LatLng[]
  closed: boolean
}

export interface Draft {
  shape: Shape
  circle: CircleDraft
  polygon: PolygonDraft
}

/** metres in a degree of latitude on the mean sphere (Leaflet's and the server's) */
const METRES_PER_DEGREE = (Math.PI * 6_371_000) / 180
export const DEFAULT_RADIUS_M = 200
/** around a fitted shape, clear of the zoom buttons at the top left */
const FIT = { paddingTopLeft: [56, 40] as L.PointTuple, paddingBottomRight: [40, 40] as L.PointTuple }

/** A draft from a stored area (a polygon's holes are not drawn: the outer ring is what is edited). */
export function draftOf(area: GeofenceArea | null): Draft {
  const draft: Draft = { shape: 'Circle', circle: { centre: null, radius: String(DEFAULT_RADIUS_M) }, polygon: { points: [], closed: false } }
  if (area?.type === 'Circle') draft.circle = { centre: L.latLng(area.center[0], area.center[1]), radius: String(area.radius) }
  if (area?.type === 'Polygon') {
    const outer = unwrapRing(area.coordinates[0] ?? [])
    draft.shape = 'Polygon'
    draft.polygon = { points: outer.slice(0, -1).map(([lat, lng]) => L.latLng(lat, lng)), closed: true }
  }
  return draft
}

/** 1e-7 degrees, as the server keeps positions */
const round7 = (value: number) => Math.round(value * 1e7) / 1e7

export type AreaResult = { area: GeofenceArea } | { field: 'area' | 'area/radius'; message: string }

/** The area to send, or what is missing (the server checks the rest: ranges, self-intersection). */
export function toArea(draft: Draft): AreaResult {
  if (draft.shape === 'Circle') {
    const { centre, radius } = draft.circle
    if (!centre) return { field: 'area', message: s.needCentre }
    const metres = radius.trim() === '' ? NaN : Number(radius)
    if (!Number.isFinite(metres)) return { field: 'area/radius', message: s.radiusNotNumber }
    return { area: { type: 'Circle', center: [round7(centre.lat), round7(wrapLongitude(centre.lng))], radius: metres } }
  }
  const { points } = draft.polygon
  if (points.length < 3) return { field: 'area', message: s.needCorners }
  const ring = points.map((p) => [round7(wrapLongitude(p.lng)), round7(p.lat)] as [number, number])
  return { area: { type: 'Polygon', coordinates: [[...ring, [ring[0]![0], ring[0]![1]]]] } }
}

/**
 * The server's words about a polygon ("is self-intersecting: the edge from point 0 to point 1
 * meets …", points counted from 0 along the ring, the closing one last) with corners numbered as
 * the map shows them, from 1.
 */
export function areaProblem(message: string, corners: number): string {
  const words = message.charAt(0).toLowerCase() + message.slice(1)
  const named = words.replace(/\bpoint (\d+)/g, (_, index: string) => s.corner((Number(index) % Math.max(1, corners)) + 1))
  return s.areaProblem(named)
}

export interface EditorEvents {
  /** a click on the map (not on a handle) */
  click(at: L.LatLng): void
  moveCentre(at: L.LatLng): void
  /** whole metres, also while the handle is being dragged */
  radius(metres: number): void
  movePoint(index: number, at: L.LatLng): void
  /** the first corner was clicked with 3 or more placed */
  close(): void
}

const OTHER_STYLE: L.PathOptions = { interactive: false, color: '#6e7781', weight: 1, opacity: 0.7, fillOpacity: 0.06, dashArray: '4 4' }
const SHAPE_STYLE: L.PathOptions = { interactive: false, color: '#6a3aa6', weight: 3, fillColor: '#8e5cc9', fillOpacity: 0.18 }

function handle(className: string, text: string, title: string, at: L.LatLng): L.Marker {
  const el = document.createElement('span')
  el.className = className
  el.textContent = text
  return L.marker(at, { icon: L.divIcon({ html: el, className: 'gf-handle-icon', iconSize: [22, 22], iconAnchor: [11, 11] }), draggable: true, keyboard: false, title, autoPan: true })
}

/** where the radius handle sits: east of the centre by the radius */
function eastOf(centre: L.LatLng, metres: number): L.LatLng {
  const cos = Math.max(1e-6, Math.cos((centre.lat * Math.PI) / 180))
  return L.latLng(centre.lat, centre.lng + metres / (METRES_PER_DEGREE * cos))
}

export class GeofenceEditorMap {
  readonly map: L.Map
  private readonly shapeLayer = L.layerGroup()
  private readonly otherLayer = L.layerGroup()
  private dragging = false
  private last: Draft | null = null
  /** the circle as drawn, to bring it into view */
  private circle: L.Circle | null = null
  private sized = false

  constructor(
    container: HTMLElement,
    options: { tileUrl: string; attribution: string },
    private readonly events: EditorEvents,
    private readonly initialView: L.LatLngBounds | null,
  ) {
    // quarter zoom steps: a fitted shape fills the map rather than half of it
    this.map = L.map(container, { worldCopyJump: false, zoomControl: true, doubleClickZoom: false, zoomSnap: 0.25 })
    L.tileLayer(options.tileUrl, { maxZoom: 19, attribution: options.attribution }).addTo(this.map)
    this.map.attributionControl.setPrefix(false)
    this.otherLayer.addTo(this.map)
    this.shapeLayer.addTo(this.map)
    this.map.on('click', (e: L.LeafletMouseEvent) => this.events.click(e.latlng))
    this.map.setView([30, 0], 2)
  }

  /** after the container got its size (a dialog opening): the first time, the initial view */
  resized(): void {
    const box = this.map.getContainer().getBoundingClientRect()
    if (box.width === 0 || box.height === 0) return
    this.map.invalidateSize({ pan: false })
    if (this.sized) return
    this.sized = true
    if (this.initialView?.isValid()) this.map.fitBounds(this.initialView, { ...FIT, maxZoom: 16, animate: false })
  }

  /** the account's other geofences, faint, so that a new one can be placed beside them */
  showOthers(geofences: readonly Geofence[]): void {
    this.otherLayer.clearLayers()
    for (const geofence of geofences) for (const layer of areaLayers(geofence.area, OTHER_STYLE)) this.otherLayer.addLayer(layer)
  }

  /** the middle of the map (the cross), for placing from the keyboard */
  centre(): L.LatLng {
    return this.map.getCenter()
  }

  draw(draft: Draft): void {
    this.last = draft
    if (this.dragging) return
    this.shapeLayer.clearLayers()
    this.circle = null
    if (draft.shape === 'Circle') this.drawCircle(draft.circle)
    else this.drawPolygon(draft.polygon)
  }

  private drawCircle({ centre, radius }: CircleDraft): void {
    if (!centre) return
    const typed = Number(radius)
    const metres = Number.isFinite(typed) && typed > 0 ? typed : DEFAULT_RADIUS_M
    const circle = L.circle(centre, { ...SHAPE_STYLE, radius: metres }).addTo(this.shapeLayer)
    this.circle = circle
    const middle = handle('gf-handle gf-centre', '', s.centreLabel, centre).addTo(this.shapeLayer)
    const edge = handle('gf-handle gf-edge', '', s.radiusHandleLabel, eastOf(centre, metres)).addTo(this.shapeLayer)
    middle.on('dragstart', () => (this.dragging = true))
    middle.on('drag', () => {
      const at = middle.getLatLng()
      circle.setLatLng(at)
      edge.setLatLng(eastOf(at, circle.getRadius()))
    })
    middle.on('dragend', () => this.dragEnd(() => this.events.moveCentre(middle.getLatLng())))
    edge.on('dragstart', () => (this.dragging = true))
    edge.on('drag', () => {
      const metresNow = Math.max(1, Math.round(circle.getLatLng().distanceTo(edge.getLatLng())))
      circle.setRadius(metresNow)
      this.events.radius(metresNow)
    })
    edge.on('dragend', () => this.dragEnd(() => this.events.radius(Math.max(1, Math.round(circle.getLatLng().distanceTo(edge.getLatLng()))))))
  }

  private drawPolygon({ points, closed }: PolygonDraft): void {
    if (points.length === 0) return
    const outline = (closed ? L.polygon(points, SHAPE_STYLE) : L.polyline(points, { ...SHAPE_STYLE, dashArray: '6 6' })).addTo(this.shapeLayer)
    points.forEach((point, index) => {
      const closer = index === 0 && !closed && points.length >= 3
      const corner = handle(closer ? 'gf-handle gf-corner gf-closer' : 'gf-handle gf-corner', String(index + 1), s.cornerLabel(index + 1), point).addTo(this.shapeLayer)
      corner.on('click', () => {
        if (closer) this.events.close()
      })
      corner.on('dragstart', () => (this.dragging = true))
      corner.on('drag', () => {
        const moved = points.slice()
        moved[index] = corner.getLatLng()
        outline.setLatLngs(moved)
      })
      corner.on('dragend', () => this.dragEnd(() => this.events.movePoint(index, corner.getLatLng())))
    })
  }

  private dragEnd(report: () => void): void {
    this.dragging = false
    report()
    // the form may not have changed (a drag back to where it was): draw what it holds
    if (this.last) this.draw(this.last)
  }

  /** after a radius was typed: the whole circle in view, and more than a dot */
  showCircle(): void {
    if (!this.circle) return
    const bounds = this.circle.getBounds()
    const width = this.map.latLngToContainerPoint(bounds.getNorthEast()).x - this.map.latLngToContainerPoint(bounds.getSouthWest()).x
    if (width < 24 || !this.map.getBounds().contains(bounds)) this.map.fitBounds(bounds, { ...FIT, maxZoom: 18 })
  }

  /** a round radius (1, 2 or 5 × 10ⁿ m) about a sixth of the map across, for a circle's first centre */
  radiusForView(): number {
    const size = this.map.getSize()
    const middle = size.y / 2
    const metresAcross = this.map.distance(this.map.containerPointToLatLng([0, middle]), this.map.containerPointToLatLng([size.x, middle]))
    const wanted = (metresAcross * Math.min(size.x, size.y)) / size.x / 6
    if (!Number.isFinite(wanted) || wanted <= 0) return DEFAULT_RADIUS_M
    const power = 10 ** Math.floor(Math.log10(wanted))
    const step = [1, 2, 5, 10].find((f) => f * power >= wanted / 1.6) ?? 10
    return Math.min(100_000, Math.max(10, step * power))
  }

  destroy(): void {
    removeMap(this.map)
  }
}
