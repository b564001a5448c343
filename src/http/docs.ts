/**
 * OpenAPI 3.1 at /openapi/json and the Swagger UI at /openapi, with the UI's script and styles
 * served from the package (gateways are offline: no CDN).
 *
 * The document is generated from the routes by @elysiajs/openapi, then corrected where the
 * generator documents Elysia's machinery instead of the API (see `correctSchema` and
 * `correctOperation`). The page is our own: the plugin's puts the description unescaped into an
 * HTML attribute.
 */
import { toOpenAPISchema } from '@elysiajs/openapi'
import { Elysia } from 'elysia'
import swaggerBundle from 'swagger-ui-dist/swagger-ui-bundle.js' with { type: 'file' }
import swaggerCss from 'swagger-ui-dist/swagger-ui.css' with { type: 'file' }
import { registerFormats } from '../formats'
import { ProblemBody, problemExample } from './model'

// after the openapi plugin has loaded, which swaps in a slow `uuid` check (see formats.ts)
registerFormats()

const ASSETS = '/openapi/assets'
const SPEC_PATH = '/openapi/json'
const OPENAPI_VERSION = '3.1.0'

type Json = Record<string, unknown>
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Elysia's string branch in `string | integer` (t.Integer), `string | number` (t.Numeric), `string | boolean` (t.BooleanString) */
const COERCED = new Map([
  ['integer', 'integer'],
  ['numeric', 'number'],
  ['boolean', 'boolean'],
])

/** keywords whose content is data, not schemas */
const VALUES = new Set(['example', 'examples', 'default', 'const', 'enum'])
/** keywords whose keys are names (a property may be called `default`) */
const NAMED = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'schemas', 'paths', 'responses', 'content'])

/**
 * One JSON Schema as OpenAPI 3.1 readers expect it:
 * - Elysia validates t.Integer as `string | integer` so that a query string can be coerced (its
 *   string branch even has `default: 0`); a client sends an integer, so the integer is documented.
 * - TypeBox writes tuples the draft-07 way (`items: [...]`, `additionalItems`), which OpenAPI 3.1
 *   (JSON Schema 2020-12) reads differently: `prefixItems`, and `items: false` for "nothing more".
 */
export function correctSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(correctSchema)
  if (!isObject(schema)) return schema
  const { anyOf } = schema
  if (Array.isArray(anyOf) && anyOf.length === 2) {
    const [text, value] = anyOf as unknown[]
    if (isObject(text) && isObject(value) && text.type === 'string' && typeof text.format === 'string' && COERCED.get(text.format) === value.type) {
      const { anyOf: _, ...outer } = schema
      return correctSchema({ ...outer, ...value })
    }
  }
  const corrected: Json = {}
  for (const [key, value] of Object.entries(schema)) {
    if (VALUES.has(key)) corrected[key] = value
    else if (NAMED.has(key) && isObject(value)) corrected[key] = Object.fromEntries(Object.entries(value).map(([name, item]) => [name, correctSchema(item)]))
    else corrected[key] = correctSchema(value)
  }
  if (Array.isArray(schema.items)) {
    // a tuple: exactly `minItems`..`maxItems` items; of one kind (a coordinate pair) it is written
    // as a plain array, which every reader understands
    const kinds = new Set(schema.items.map((item) => JSON.stringify(item)))
    const [first] = corrected.items as unknown[]
    if (kinds.size === 1) corrected.items = first
    else {
      corrected.prefixItems = corrected.items
      corrected.items = schema.additionalItems === false ? false : {}
    }
    delete corrected.additionalItems
  }
  return corrected
}

const TAGS: Record<string, string> = {
  Devices: 'The devices you can reach, their commands and their live positions',
  History: "A device's route, travels and events over a time window",
  Reports: 'Trips, stops, summaries, events and routes of many devices over a period (JSON, CSV, XLSX; GPX and KML for routes)',
  'Share links': 'Read-only links to some devices, for people without an account',
  Administration: "Who you are (/me); an account's users, groups, API keys, devices and audit log",
  'Sign-in': 'People signing in to the console (a session cookie), and the first-run setup',
  Operations: 'Health, readiness and metrics; for operators, not API users',
}

interface RouteInfo {
  method: string
  path: string
  hooks?: { body?: unknown }
}

/**
 * Every route of the app this plugin is used in (Elysia delegates a plugin's global routes to its
 * parent; protected in Elysia's types, and what @elysiajs/openapi itself reads).
 */
const globalRoutes = (app: Elysia) => (app as unknown as { getGlobalRoutes(): RouteInfo[] }).getGlobalRoutes()

/** `/devices/:id` → `/devices/{id}`, as the generator names paths */
const openapiPath = (path: string) => path.replace(/:([^/]+)/g, '{$1}')

/**
 * One operation as the server really behaves:
 * - every body is read as JSON by the auth macro's `parse` hook (http/auth.ts), whatever the
 *   Content-Type; the generator sees a function there and documents no media type at all (and
 *   without one it would advertise form and multipart, which are refused).
 * - every body is bounded, so a route with one can answer 413.
 * - a query parameter with a default is optional: Elysia fills the default in.
 */
function correctOperation(operation: Json, body: unknown): Json {
  const operationWithBody = { ...operation }
  if (body !== undefined) {
    const { description, ...schema } = JSON.parse(JSON.stringify(body)) as Json
    operationWithBody.requestBody = {
      ...(typeof description === 'string' ? { description } : {}),
      required: true,
      content: { 'application/json': { schema } },
    }
    operationWithBody.responses = {
      ...(operation.responses as Json),
      413: { description: 'The body is larger than 1 MiB', content: { 'application/problem+json': { schema: ProblemBody, example: problemExample(413) } } },
    }
  }
  const corrected = correctSchema(operationWithBody) as Json
  if (Array.isArray(corrected.parameters)) {
    corrected.parameters = corrected.parameters.map((parameter: Json) =>
      parameter.in === 'query' && isObject(parameter.schema) && parameter.schema.default !== undefined ? { ...parameter, required: false } : parameter,
    )
  }
  return corrected
}

function buildDocument(app: Elysia, documentation: Json): Json {
  const { paths, components } = toOpenAPISchema(app as never, undefined, undefined, undefined, OPENAPI_VERSION) as {
    paths: Record<string, Record<string, Json>>
    components: { schemas?: Json }
  }
  const bodies = new Map<string, unknown>()
  for (const route of globalRoutes(app)) {
    if (route.hooks?.body !== undefined) bodies.set(`${route.method.toLowerCase()} ${openapiPath(route.path)}`, route.hooks.body)
  }
  const correctedPaths: Record<string, Record<string, Json>> = {}
  const tags = new Set<string>()
  for (const [path, operations] of Object.entries(paths)) {
    correctedPaths[path] = {}
    for (const [method, operation] of Object.entries(operations)) {
      correctedPaths[path][method] = correctOperation(operation, bodies.get(`${method} ${path}`))
      for (const tag of (operation.tags as string[] | undefined) ?? []) tags.add(tag)
    }
  }
  return {
    ...documentation,
    openapi: OPENAPI_VERSION,
    // the API user's tags first, in TAGS order; Swagger UI shows them in this order
    tags: [...Object.keys(TAGS).filter((name) => tags.has(name)), ...[...tags].filter((name) => !(name in TAGS))].map((name) =>
      TAGS[name] ? { name, description: TAGS[name] } : { name },
    ),
    paths: correctedPaths,
    components: { ...(documentation.components as Json), schemas: correctSchema(components.schemas ?? {}) },
  }
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** The Swagger UI page; every text from elsewhere is escaped (the API description has quotes and `<key>`). */
function docsPage(title: string, summary: string): string {
  // JSON inside <script>: `<` escaped so that no string can close the element
  const options = JSON.stringify({ url: SPEC_PATH, dom_id: '#swagger-ui' }).replace(/</g, '\\u003c')
  return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>${escapeHtml(title)}</title>
  <meta name="description" content="${escapeHtml(summary)}" />
  <link rel="stylesheet" href="${ASSETS}/swagger-ui.css" />
  <style>
    @media (prefers-color-scheme: dark) {
      body { background-color: #222; }
      .swagger-ui { filter: invert(92%) hue-rotate(180deg); }
      .swagger-ui .microlight { filter: invert(100%) hue-rotate(180deg); }
    }
  </style>
</head>
<body>
  <noscript>The API reference needs JavaScript; the document itself is at <a href="${SPEC_PATH}">${SPEC_PATH}</a>.</noscript>
  <div id="swagger-ui"></div>
  <script src="${ASSETS}/swagger-ui-bundle.js"></script>
  <script>
    window.onload = () => { window.ui = SwaggerUIBundle(${options}) }
  </script>
</body>
</html>`
}

export function apiDocs(description: string, version: string) {
  const title = 'Fleet tracker API'
  const documentation: Json = {
    info: { title, version, description, license: { name: 'MIT', identifier: 'MIT' } },
    // relative: the server that serves this document
    servers: [{ url: '/' }],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An API key (`cli key create --user ID`) or a share token' },
      },
    },
    security: [{ bearer: [] }],
  }
  // the description's first paragraph, as plain text, for link previews and search engines
  const summary = description.split('\n\n')[0].replace(/[`*]/g, '').replace(/\s+/g, ' ')
  const page = docsPage(title, summary)
  // built on first request, once every route is registered; rebuilt if routes are added later
  let cached: { routes: number; document: Json } | undefined
  const docs: Elysia = new Elysia({ name: 'api-docs' })
  return docs
    .get(`${ASSETS}/swagger-ui-bundle.js`, () => new Response(Bun.file(swaggerBundle), { headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=86400' } }), {
      detail: { hide: true },
    })
    .get(`${ASSETS}/swagger-ui.css`, () => new Response(Bun.file(swaggerCss), { headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=86400' } }), {
      detail: { hide: true },
    })
    .get('/openapi', () => new Response(page, { headers: { 'content-type': 'text/html; charset=utf-8' } }), { detail: { hide: true } })
    .get(
      SPEC_PATH,
      () => {
        const routes = globalRoutes(docs).length
        if (cached?.routes !== routes) cached = { routes, document: buildDocument(docs, documentation) }
        return cached.document
      },
      { detail: { hide: true } },
    )
}
