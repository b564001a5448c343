/**
 * The History view's map: the route as a line, the start and the end, the stops as numbered
 * markers with their durations, the events that carry a place, and the playback marker. A chosen
 * travel is drawn over the route, thicker. Leaflet as on the live map (and the same tiles).
 */
import L from 'leaflet'
import { formatDuration, formatTime, lineRuns, type Track } from './history'
import { removeMap } from './mapTeardown'
import { alarmName } from './eventNames'
import { strings } from './strings'
import type { DeviceEvent, HistoryStop } from './types'

/** Leaflet keeps an object per vertex: past this many fixes the line is drawn from every n-th one. */
const MAX_LINE_VERTICES = 50_000

export interface HistoryMapOptions {
  tileUrl: string
  attribution: string
  /** a stop or an event marker was chosen: move the playback to this moment */
  onPick(seconds: number): void
}

function element(tag: string, className: string, text?: string): HTMLElement {
  const el = document.createElement(tag)
  el.className = className
  if (text !== undefined) el.textContent = text
  return el
}

export class HistoryMap {
  readonly map: L.Map
  private drawn = L.layerGroup()
  private highlight: L.Polyline | null = null
  private playback: L.Marker | null = null
  private playbackArrow: HTMLElement | null = null
  private bounds: L.LatLngBounds | null = null
  private track: Track | null = null

  constructor(
    container: HTMLElement,
    private readonly options: HistoryMapOptions,
  ) {
    this.map = L.map(container, { zoomControl: true }).setView([30, 0], 2)
    L.tileLayer(options.tileUrl, { maxZoom: 19, attribution: options.attribution }).addTo(this.map)
    this.map.attributionControl.setPrefix(false)
    this.drawn.addTo(this.map)
  }

  /** Draws a window's route, stops and events (nothing when `track` is null) and fits the view to them. */
  show(track: Track | null, stops: HistoryStop[], events: DeviceEvent[], withDate: boolean) {
    this.drawn.clearLayers()
    this.highlight = null
    this.playback = null
    this.track = track
    this.bounds = null
    if (!track || track.time.length === 0) return
    const n = track.time.length
    const step = Math.ceil(n / MAX_LINE_VERTICES)
    // one part a stretch between reporting gaps: a gap is not drawn as if it were driven
    const line: L.LatLngExpression[][] = lineRuns(track).map(([first, last]) => {
      const part: L.LatLngExpression[] = []
      for (let i = first; i < last; i += step) part.push([track.latitude[i], track.longitude[i]])
      part.push([track.latitude[last], track.longitude[last]])
      return part
    })
    // a white casing under the line keeps it readable on any tile
    L.polyline(line, { color: '#fff', weight: 8, opacity: 0.9, interactive: false }).addTo(this.drawn)
    const route = L.polyline(line, { color: '#1756a9', weight: 4, opacity: 0.95, interactive: false }).addTo(this.drawn)
    this.bounds = route.getBounds()

    this.endMarker(track.latitude[0], track.longitude[0], 'A', strings.historyStart, 'hist-start', track.time[0])
    this.endMarker(track.latitude[n - 1], track.longitude[n - 1], 'B', strings.historyEnd, 'hist-end', track.time[n - 1])

    stops.forEach((stop, i) => {
      const title = strings.historyStopTitle(i + 1, formatTime(stop.start, withDate), formatTime(stop.end, withDate), formatDuration(stop.duration))
      const root = element('div', 'hist-stop')
      root.append(element('span', 'hist-stop-dot', String(i + 1)), element('span', 'hist-stop-label', formatDuration(stop.duration)))
      const marker = L.marker([stop.latitude, stop.longitude], {
        icon: L.divIcon({ html: root, className: 'hist-icon', iconSize: [26, 26], iconAnchor: [13, 13] }),
        title,
        alt: title,
        keyboard: true,
        riseOnHover: true,
      })
      this.pickable(marker, stop.start, `stop-${i + 1}`)
      marker.setZIndexOffset(500)
      marker.addTo(this.drawn)
    })

    for (const event of events) {
      if (!event.coordinates) continue
      const title = `${formatTime(event.timestamp, withDate)} ${alarmName(event.alarm_code)}`
      const pin = element('div', 'hist-event')
      pin.append(element('span', '', '!'))
      const marker = L.marker(event.coordinates, {
        // a pin: the tip (14 px below the centre of the turned square) is the place
        icon: L.divIcon({ html: pin, className: 'hist-icon', iconSize: [20, 20], iconAnchor: [10, 24] }),
        title,
        alt: title,
        keyboard: true,
      })
      this.pickable(marker, event.timestamp, 'event')
      marker.addTo(this.drawn)
    }

    const root = element('div', 'mk state-moving hist-playback')
    this.playbackArrow = element('span', 'mk-arrow')
    root.append(this.playbackArrow, element('span', 'mk-dot'))
    this.playback = L.marker([track.latitude[0], track.longitude[0]], {
      icon: L.divIcon({ html: root, className: 'mk-icon', iconSize: [28, 28], iconAnchor: [14, 14] }),
      keyboard: false,
      interactive: false,
      zIndexOffset: 2000,
    }).addTo(this.drawn)
    this.fit(false)
  }

  private endMarker(latitude: number, longitude: number, glyph: string, name: string, className: string, at: number) {
    const marker = L.marker([latitude, longitude], {
      icon: L.divIcon({ html: element('div', `hist-end-mark ${className}`, glyph), className: 'hist-icon', iconSize: [24, 24], iconAnchor: [12, 12] }),
      title: name,
      alt: name,
      keyboard: true,
    })
    this.pickable(marker, at, className)
    marker.addTo(this.drawn)
  }

  private pickable(marker: L.Marker, at: number, tag: string) {
    marker.on('click', () => this.options.onPick(at))
    marker.on('add', () => {
      const el = marker.getElement()
      el?.setAttribute('data-mark', tag)
      el?.addEventListener('keydown', (e) => {
        if (e.key !== 'Enter' && e.key !== ' ') return
        e.preventDefault()
        this.options.onPick(at)
      })
    })
  }

  /** moves the playback marker; `follow` pans when it leaves the view */
  setPlayback(latitude: number, longitude: number, course: number | null, follow: boolean) {
    if (!this.playback) return
    this.playback.setLatLng([latitude, longitude])
    if (this.playbackArrow) {
      this.playbackArrow.hidden = course === null
      if (course !== null) this.playbackArrow.style.transform = `rotate(${Math.round(course)}deg)`
    }
    const el = this.playback.getElement()
    if (el) el.dataset.at = `${latitude.toFixed(6)},${longitude.toFixed(6)}`
    if (follow && !this.map.getBounds().pad(-0.1).contains([latitude, longitude])) this.map.panTo([latitude, longitude], { animate: false })
  }

  /** draws the fixes between two moments over the route, and shows them */
  highlightSpan(from: number, to: number) {
    this.highlight?.remove()
    this.highlight = null
    const track = this.track
    if (!track) return
    const line: L.LatLngExpression[] = []
    for (let i = 0; i < track.time.length; i++) if (track.time[i] >= from && track.time[i] <= to) line.push([track.latitude[i], track.longitude[i]])
    if (line.length < 2) return
    this.highlight = L.polyline(line, { color: '#e36209', weight: 6, opacity: 0.95, interactive: false }).addTo(this.drawn)
    this.map.fitBounds(this.highlight.getBounds(), { padding: [40, 40], maxZoom: 16 })
  }

  /** shows where a reporting gap began and where the device reappeared */
  focusGap(start: number, end: number) {
    const track = this.track
    if (!track) return
    const at = (t: number) => {
      const i = track.time.indexOf(t)
      return i < 0 ? null : L.latLng(track.latitude[i], track.longitude[i])
    }
    const [from, to] = [at(start), at(end)]
    if (from && to) this.map.fitBounds(L.latLngBounds(from, to), { padding: [60, 60], maxZoom: 16 })
  }

  focusPoint(latitude: number, longitude: number) {
    this.map.setView([latitude, longitude], Math.max(this.map.getZoom(), 15))
  }

  fit(animate = true) {
    this.highlight?.remove()
    this.highlight = null
    // more room on the right: stops' durations are written to the right of their marks
    if (this.bounds?.isValid()) this.map.fitBounds(this.bounds, { paddingTopLeft: [32, 40], paddingBottomRight: [96, 32], maxZoom: 16, animate })
  }

  resize() {
    this.map.invalidateSize({ pan: false })
  }

  destroy() {
    removeMap(this.map)
  }
}
