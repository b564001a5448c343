/**
 * Removing a Leaflet map safely, for every map of the console (live, history, geofence editor).
 * Leaflet 1.9's remove() cancels pans and flights but leaves a zoom animation's end, a 250 ms
 * timer, to run on the removed map, where it throws reading `_leaflet_pos` (seen when a view
 * closes right after a zoom: the fleet fitted on arrival, a + press).
 */
import type L from 'leaflet'

export function removeMap(map: L.Map): void {
  map.stop()
  // the pending end of the zoom animation then finds none under way and returns at once
  ;(map as unknown as { _animatingZoom?: boolean })._animatingZoom = false
  map.off()
  map.remove()
}
