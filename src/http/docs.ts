/**
 * OpenAPI 3.1 at /openapi/json and the Swagger UI at /openapi, with the UI's script and styles
 * served from the package (gateways are offline: no CDN).
 */
import { openapi } from '@elysiajs/openapi'
import { Elysia } from 'elysia'
import swaggerBundle from 'swagger-ui-dist/swagger-ui-bundle.js' with { type: 'file' }
import swaggerCss from 'swagger-ui-dist/swagger-ui.css' with { type: 'file' }
import { registerFormats } from '../formats'

// after the openapi plugin has loaded, which swaps in a slow `uuid` check (see formats.ts)
registerFormats()

const ASSETS = '/openapi/assets'

export function apiDocs(description: string, version: string) {
  return new Elysia({ name: 'api-docs' })
    .get(`${ASSETS}/swagger-ui-bundle.js`, () => new Response(Bun.file(swaggerBundle), { headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=86400' } }), {
      detail: { hide: true },
    })
    .get(`${ASSETS}/swagger-ui.css`, () => new Response(Bun.file(swaggerCss), { headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=86400' } }), {
      detail: { hide: true },
    })
    .use(
      openapi({
        path: '/openapi',
        specPath: '/openapi/json',
        provider: 'swagger-ui',
        swagger: { cdn: `${ASSETS}/swagger-ui-bundle.js`, theme: `${ASSETS}/swagger-ui.css`, version: '5.35.0' } as never,
        documentation: {
          openapi: '3.1.0',
          info: { title: 'Fleet tracker API', version, description },
          components: {
            securitySchemes: {
              bearer: { type: 'http', scheme: 'bearer', description: 'An API key (`cli key create --user ID`) or a share token' },
            },
          },
          security: [{ bearer: [] }],
        },
      }),
    )
}
