/**
 * Where the console is: the part of the URL after `#`, so that the server serves one page at `/`
 * and no view's address can shadow an API path. `#/devices/{id}` opens a device's panel on the
 * live map; the browser's back button closes it.
 */
import { signal } from '@preact/signals'

export type Route =
  | { view: 'map'; device: string | null }
  | { view: 'history'; device: string | null; from: string | null; to: string | null }
  | { view: 'share' | 'admin' | 'events' | 'reports' }

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent)
  if (path[0] === 'devices' && path[1]) return { view: 'map', device: path[1] }
  // #/history/{id}/{from}/{to}: a device's history, days as YYYY-MM-DD in the browser's time zone
  if (path[0] === 'history') return { view: 'history', device: path[1] ?? null, from: path[2] ?? null, to: path[3] ?? null }
  if (path[0] === 'share' || path[0] === 'admin' || path[0] === 'events' || path[0] === 'reports') return { view: path[0] }
  return { view: 'map', device: null }
}

export const route = signal<Route>(parseRoute(location.hash))
addEventListener('hashchange', () => {
  route.value = parseRoute(location.hash)
})

export const deviceHref = (id: string) => `#/devices/${encodeURIComponent(id)}`
export const historyHref = (id: string, from?: string, to?: string) =>
  `#/history/${encodeURIComponent(id)}${from ? `/${from}${to && to !== from ? `/${to}` : ''}` : ''}`
export function go(href: string) {
  if (location.hash !== href) location.hash = href
}
