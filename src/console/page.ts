/**
 * The console's HTML: a shell that links the current bundle (its file names carry their content
 * hash) and hands the app what the server knows (the tile URL). Relative links, so that APP_URL
 * may carry a path prefix behind a proxy.
 */
import { tileSource } from '../share/page'
import { strings } from './app/strings'
import type { ConsoleAssets } from './assets'

const escapeHtml = (value: string) =>
  value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

// a pin in the console's blue, inline: no request, and no 404 in the console for /favicon.ico
const ICON = `data:image/svg+xml,${encodeURIComponent(
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><path fill="#1756a9" d="M16 2a10 10 0 0 0-10 10c0 7.5 10 18 10 18s10-10.5 10-18A10 10 0 0 0 16 2z"/><circle cx="16" cy="12" r="4" fill="#fff"/></svg>',
)}`

export function consolePage(assets: ConsoleAssets, tileUrl: string, attribution: string): string {
  const style = assets.style ? `\n  <link rel="stylesheet" href="console/assets/${escapeHtml(assets.style)}">` : ''
  return `<!doctype html>
<html lang="${strings.lang}">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
  <meta name="robots" content="noindex, nofollow">
  <meta name="color-scheme" content="light">
  <title>${escapeHtml(strings.pageTitle)}</title>
  <link rel="icon" href="${ICON}">${style}
  <script type="module" src="console/assets/${escapeHtml(assets.script)}"></script>
</head>
<body data-tile-url="${escapeHtml(tileUrl)}" data-tile-attribution="${escapeHtml(attribution)}">
  <div id="app"><p class="boot">${escapeHtml(strings.loading)}</p></div>
  <noscript><p class="boot">${escapeHtml(strings.noScript)}</p></noscript>
</body>
</html>
`
}

export function pageHeaders(tileUrl: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    // the page names the current bundle: always ask again (it is small)
    'cache-control': 'no-cache',
    'referrer-policy': 'same-origin',
    'x-content-type-options': 'nosniff',
    // Leaflet and Preact set styles through the CSSOM (element.style), which style-src does not govern
    'content-security-policy':
      `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: ${tileSource(tileUrl)}; ` +
      "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  }
}
