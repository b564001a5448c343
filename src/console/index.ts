/**
 * The owner's console at `/`: a web app served from the binary (no CDN; only map tiles come from
 * TILE_URL). GET / is the page; /console/assets/* its script and styles, content-hashed and
 * cached for a year. The app signs in with POST /session and then calls the API like any client,
 * authenticated by the session cookie.
 */
import { Elysia, t } from 'elysia'
import { NotFound } from '../errors'
import { responses } from '../http/model'
import { consoleAssets } from './assets'
import { consolePage, pageHeaders } from './page'

export interface ConsoleOptions {
  tileUrl: string
}

const acceptsGzip = (request: Request) => /\bgzip\b/i.test(request.headers.get('accept-encoding') ?? '')

export function consoleRoutes({ tileUrl }: ConsoleOptions) {
  const attribution = /openstreetmap\.(org|fr)/i.test(tileUrl) ? '© OpenStreetMap contributors' : ''
  let page: string | undefined

  return new Elysia({ name: 'console' })
    .onStart(() => {
      // bundle while the server is idle rather than on the first visit (a failure shows on that visit)
      consoleAssets().catch(() => {})
    })
    .get(
      '/',
      async () => {
        page ??= consolePage(await consoleAssets(), tileUrl, attribution)
        return new Response(page, { headers: pageHeaders(tileUrl) })
      },
      {
        detail: {
          tags: ['Console'],
          summary: 'The console (web app for people)',
          description:
            'HTML: the fleet owner\'s console, a web app served by this server (no CDN; only map tiles come from TILE_URL). ' +
            'A person signs in with `POST /session`; the app then calls this API with the session cookie. ' +
            'Its script and styles are under `/console/assets/`, named by their content hash and cached for a year.',
          security: [],
          responses: responses({ 200: { schema: t.String(), description: 'The page', contentType: 'text/html' } }),
        },
      },
    )
    .get(
      '/console/assets/:name',
      async ({ params, request }) => {
        const asset = (await consoleAssets()).files.get(params.name)
        if (!asset) throw new NotFound(`No console asset ${params.name}`)
        const gzip = acceptsGzip(request)
        const headers: Record<string, string> = {
          'content-type': asset.type,
          'cache-control': 'public, max-age=31536000, immutable',
          'x-content-type-options': 'nosniff',
          vary: 'accept-encoding',
        }
        if (gzip) headers['content-encoding'] = 'gzip'
        return new Response(gzip ? asset.gzipped : asset.body, { headers })
      },
      { detail: { hide: true } },
    )
}
