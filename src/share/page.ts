/**
 * The shared-link web page (`original_url`): a map of the link's devices for someone with no
 * account, served from the package with no CDN, because gateways run offline. Leaflet and the
 * page's own script and styles are `type: 'file'` imports, so `bun build --compile` embeds them.
 * The page reads everything else from the API with the token in the Authorization header.
 */
import { readFileSync } from 'node:fs'
import { Elysia, t } from 'elysia'
import leafletCss from 'leaflet/dist/leaflet.css' with { type: 'file' }
import leafletJs from 'leaflet/dist/leaflet.js' with { type: 'file' }
import layersIcon2x from 'leaflet/dist/images/layers-2x.png' with { type: 'file' }
import layersIcon from 'leaflet/dist/images/layers.png' with { type: 'file' }
import markerIcon2x from 'leaflet/dist/images/marker-icon-2x.png' with { type: 'file' }
import markerIcon from 'leaflet/dist/images/marker-icon.png' with { type: 'file' }
import markerShadow from 'leaflet/dist/images/marker-shadow.png' with { type: 'file' }
import { NotFound } from '../errors'
import { responses } from '../http/model'
import { DEFAULT_GAP_THRESHOLD_SECONDS } from '../track'
import endedHtml from './page/ended.html' with { type: 'file' }
import pageHtml from './page/index.html' with { type: 'file' }
import pageCss from './page/share.css' with { type: 'file' }
import pageJs from './page/share.js' with { type: 'file' }
import { PERMISSION } from './permissions'
import type { ShareService } from './service'
import { newViewer, viewerCookie, viewerOf } from './viewer'

const LEAFLET = 'public, max-age=86400'
// short: a new release's script must reach open pages soon
const OWN = 'public, max-age=300'

// a Map, not an object literal: the name comes from the URL, and `constructor` or `__proto__`
// must be unknown assets, not Object.prototype's members
const ASSETS = new Map<string, { path: string; type: string; cache: string }>([
  ['leaflet.js', { path: leafletJs, type: 'text/javascript; charset=utf-8', cache: LEAFLET }],
  ['leaflet.css', { path: leafletCss, type: 'text/css; charset=utf-8', cache: LEAFLET }],
  ['share.js', { path: pageJs, type: 'text/javascript; charset=utf-8', cache: OWN }],
  ['share.css', { path: pageCss, type: 'text/css; charset=utf-8', cache: OWN }],
  // leaflet.css names its images relative to itself: images/…
  ['images/marker-icon.png', { path: markerIcon, type: 'image/png', cache: LEAFLET }],
  ['images/marker-icon-2x.png', { path: markerIcon2x, type: 'image/png', cache: LEAFLET }],
  ['images/marker-shadow.png', { path: markerShadow, type: 'image/png', cache: LEAFLET }],
  ['images/layers.png', { path: layersIcon, type: 'image/png', cache: LEAFLET }],
  ['images/layers-2x.png', { path: layersIcon2x, type: 'image/png', cache: LEAFLET }],
])

const template = (path: unknown) => {
  let text: string | undefined
  return () => (text ??= readFileSync(path as string, 'utf8'))
}
const pageTemplate = template(pageHtml)
const endedTemplate = template(endedHtml)

const escapeHtml = (value: string) =>
  value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

function fill(html: string, values: Record<string, string>): string {
  return html.replace(/\{\{(\w+)\}\}/g, (_, name: string) => escapeHtml(Object.hasOwn(values, name) ? values[name] : ''))
}

/** `https://{s}.tile.example.org/…` → `https://*.tile.example.org`, for the page's img-src. */
export function tileSource(tileUrl: string): string {
  const match = /^(https?:\/\/)([^/?#]+)/i.exec(tileUrl)
  return match ? match[1] + match[2].replace(/\{[^}]*\}/g, '*') : 'https:'
}

/** `tileUrl` null: a page without the map (no tiles to allow). */
function pageHeaders(tileUrl: string | null, extra: Record<string, string> = {}): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    // the URL carries the token: never send it on, never keep a copy in a cache
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'content-security-policy':
      `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:${tileUrl === null ? '' : ` ${tileSource(tileUrl)}`}; ` +
      "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ...extra,
  }
}

const LINK_PAGES = {
  unknown: {
    status: 404,
    heading: 'This link is not valid',
    message: 'Check that you copied the whole link, or ask the person who sent it for a new one.',
  },
  ended: {
    status: 410,
    heading: 'This shared link has ended',
    message: 'The link has expired or was revoked. Ask the person who shared it for a new link.',
  },
} as const

/**
 * What a browser gets for a share link that is unknown (404) or has ended (410), at
 * `original_url` and at `short_url` alike. `assets` is the relative path from the page's address
 * to /share/assets/ (the page links its stylesheet relatively, so a path prefix in APP_URL works).
 */
export function linkPage(kind: keyof typeof LINK_PAGES, assets = 'share/assets/', extraHeaders: Record<string, string> = {}): Response {
  const { status, heading, message } = LINK_PAGES[kind]
  return new Response(fill(endedTemplate(), { heading, message, assets }), { status, headers: pageHeaders(null, extraHeaders) })
}

export interface SharePageOptions {
  tileUrl: string
  /** APP_URL: the viewer cookie is Secure when it is https */
  appUrl: string
}

export function sharePageRoutes(shares: ShareService, { tileUrl, appUrl }: SharePageOptions) {
  const attribution = /openstreetmap\.(org|fr)/i.test(tileUrl) ? '© OpenStreetMap contributors' : ''
  const secureCookie = appUrl.startsWith('https:')

  return new Elysia({ name: 'share-page' })
    .get(
      '/share',
      async ({ query, request }) => {
        const url = new URL(request.url)
        // the page's relative URLs (assets, API) assume /share; /share/ would break every one of them
        if (url.pathname.endsWith('/')) return new Response(null, { status: 301, headers: { location: `../share${url.search}`, 'referrer-policy': 'no-referrer' } })
        const token = query.token ?? ''
        // a first visit gets a viewer id, which the page's API calls then carry: one viewer, counted once
        const fresh = viewerCookie(request) ? null : newViewer(secureCookie)
        const opened = token === '' ? null : await shares.open(token, fresh?.viewer ?? viewerOf(request, ''))
        if (opened === null) return linkPage('unknown')
        if (opened === 'inactive') return linkPage('ended')
        const { acl } = opened.principal
        const html = fill(pageTemplate(), {
          tileUrl,
          attribution,
          expiresAt: new Date(opened.expiresAt).toISOString(),
          gapThreshold: String(DEFAULT_GAP_THRESHOLD_SECONDS),
          company: opened.accountName,
          title: opened.accountName ? `Shared vehicles · ${opened.accountName}` : 'Shared vehicles',
          // what the page offers; the API still decides each request (a link patched later gets 403, and the page hides the part)
          history: String(acl.has(PERMISSION.history)),
          events: String(acl.has(PERMISSION.events)),
        })
        return new Response(html, { headers: pageHeaders(tileUrl, fresh ? { 'set-cookie': fresh.setCookie } : {}) })
      },
      {
        query: t.Object({ token: t.Optional(t.String()) }, { additionalProperties: true }),
        detail: {
          tags: ['Share links'],
          summary: 'The shared-link web page',
          description:
            'HTML: a map of the link\'s devices with their live positions, for a person with no account, under the name of the account that shares them. ' +
            'With the history permission the page has a day picker and draws the chosen day\'s route (never joined across a reporting gap); with the ' +
            'events permission it lists the events of that day (of the last 24 h without history). No Authorization header: ' +
            'the token is in the URL (original_url); the page then calls the API with it as a Bearer token. 410 with a page saying so ' +
            'when the link has expired or was revoked; 404 for an unknown token. Sends `Referrer-Policy: no-referrer` and `Cache-Control: no-store`.',
          security: [],
          responses: responses({ 200: { schema: t.String(), description: 'The page', contentType: 'text/html' }, 404: { description: 'Unknown token (an HTML page)' }, 410: { description: 'The link has expired or was revoked (an HTML page)' } }),
        },
      },
    )
    .get(
      '/share/assets/*',
      ({ params }) => {
        const asset = ASSETS.get(params['*'])
        if (!asset) throw new NotFound(`No asset ${params['*']}`)
        return new Response(Bun.file(asset.path), { headers: { 'content-type': asset.type, 'cache-control': asset.cache, 'x-content-type-options': 'nosniff' } })
      },
      { detail: { hide: true } },
    )
}
