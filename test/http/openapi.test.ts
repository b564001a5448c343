import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createConfig, lintFromString } from '@redocly/openapi-core'
import { Validator } from '@seriousme/openapi-schema-validator'
import { Document, Spectral } from '@stoplight/spectral-core'
import { Json as JsonParser } from '@stoplight/spectral-parsers'
import { oas } from '@stoplight/spectral-rulesets'
import { Elysia } from 'elysia'
import { apiDocs } from '../../src/http/docs'
import { openWorld, type EngineWorld } from '../support/world'

interface Schema {
  type?: string
  anyOf?: Schema[]
  items?: Schema | Schema[] | false
  prefixItems?: Schema[]
  minItems?: number
  maxItems?: number
  properties?: Record<string, Schema>
  required?: string[]
  format?: string
}
interface Parameter {
  name: string
  in: string
  required: boolean
  schema: Schema
}
interface MediaType {
  schema: Schema
  example?: { status: number; title: string; detail: string }
}
interface Operation {
  parameters?: Parameter[]
  requestBody?: { content: Record<string, MediaType> }
  responses: Record<string, { content?: Record<string, MediaType> }>
}
interface OpenApiDocument {
  openapi: string
  info: { description: string }
  paths: Record<string, Record<string, Operation>>
}

let world: EngineWorld
let text: string
let doc: OpenApiDocument
beforeAll(async () => {
  world = await openWorld()
  const res = await world.call('GET', '/openapi/json')
  expect(res.status).toBe(200)
  text = await res.text()
  doc = JSON.parse(text)
})
afterAll(() => world.close())

const operations = () => Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ route: `${method.toUpperCase()} ${path}`, operation })))
const parameter = (path: string, name: string) => doc.paths[path].get.parameters!.find((p) => p.name === name)!

describe('OpenAPI', () => {
  test('the document is OpenAPI 3.1 and every route declares its error responses', async () => {
    expect(doc.openapi).toStartWith('3.1')
    expect(doc.info.description).toContain('problem details')
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/devices', '/devices/{id}', '/devices/{id}/commands']))
    for (const { route, operation } of operations()) {
      const statuses = Object.keys(operation.responses ?? {})
      expect({ route, hasSuccess: statuses.some((s) => s.startsWith('2') || s.startsWith('3')) }).toEqual({ route, hasSuccess: true })
      if (route.includes(' /devices')) expect({ route, statuses }).toEqual({ route, statuses: expect.arrayContaining(['401']) })
    }
  })

  // The counts are errors only (severity "error"); warnings such as a missing contact or
  // /devices/{id}/x next to /devices/share/{id} are choices, not mistakes.
  test("Spectral's OpenAPI ruleset reports no error", async () => {
    const spectral = new Spectral()
    spectral.setRuleset(oas as never)
    const results = await spectral.run(new Document(text, JsonParser, 'openapi.json'))
    const errors = results.filter((r) => r.severity === 0).map((r) => `${r.code} ${r.path.join('.')}: ${r.message}`)
    expect(errors).toEqual([])
  })

  test("Redocly's recommended ruleset, with invalid examples as errors, reports no error", async () => {
    const config = await createConfig({
      extends: ['recommended'],
      rules: { 'no-invalid-media-type-examples': 'error', 'no-invalid-schema-examples': 'error', 'no-invalid-parameter-examples': 'error' },
    })
    const problems = await lintFromString({ source: text, absoluteRef: 'openapi.json', config })
    const errors = problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`)
    expect(errors).toEqual([])
  })

  test('the document is valid against the OpenAPI 3.1 schema', async () => {
    const result = await new Validator().validate(JSON.parse(text))
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
  })

  test('parameters with a default are optional; from and to are required', () => {
    for (const [path, name] of [['/devices', 'limit'], ['/devices', 'offset'], ['/devices/{id}/history/route', 'stop_threshold_time'], ['/devices/{id}/history/travels', 'stop_threshold_time'], ['/devices/{id}/history/route', 'gap_threshold_time'], ['/devices/{id}/history/travels', 'gap_threshold_time']]) {
      expect({ path, name, required: parameter(path, name).required }).toEqual({ path, name, required: false })
    }
    for (const name of ['from', 'to']) expect(parameter('/devices/{id}/history/route', name).required).toBe(true)
  })

  test('integers are documented as integers, not as the string | integer union Elysia coerces with', () => {
    for (const [path, name] of [['/devices', 'limit'], ['/devices', 'offset'], ['/devices/{id}/history/route', 'from'], ['/devices/{id}/history/route', 'stop_threshold_time'], ['/devices/{id}/history/route', 'gap_threshold_time']]) {
      const { schema } = parameter(path, name)
      expect({ name, type: schema.type, anyOf: schema.anyOf }).toEqual({ name, type: 'integer', anyOf: undefined })
    }
    // nowhere in the document, responses included (the problem body's status, unique_views)
    expect(text).not.toContain('"format":"integer"')
    expect(text).not.toContain('"format":"numeric"')
  })

  test('[latitude, longitude] is an array of exactly two numbers', () => {
    const pair = { type: 'array', items: { type: 'number' }, minItems: 2, maxItems: 2 }
    const device = doc.paths['/devices/{id}'].get.responses['200'].content!['application/json'].schema
    expect(device.properties!.location.anyOf).toEqual([pair, { type: 'null' }])
    const event = doc.paths['/devices/{id}/events'].get.responses['200'].content!['application/json'].schema.items as Schema
    expect(event.properties!.coordinates.anyOf).toEqual([pair, { type: 'null' }])
    expect(text).not.toContain('additionalItems')
  })

  test('each error status has an example of its own', () => {
    for (const { route, operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses)) {
        const problem = response.content?.['application/problem+json']
        if (!problem) continue
        expect({ route, status: problem.example?.status }).toEqual({ route, status: Number(status) })
      }
    }
    const errorsOf = doc.paths['/devices/{id}'].get.responses
    const [unauthorized, notFound] = [errorsOf['401'], errorsOf['404']].map((r) => r.content!['application/problem+json'].example!)
    expect(unauthorized).toMatchObject({ status: 401, title: 'Unauthorized' })
    expect(notFound).toMatchObject({ status: 404, title: 'Not Found' })
    expect(unauthorized.detail).not.toBe(notFound.detail)
  })

  test('request bodies are advertised as JSON only, with their schema and their 413', () => {
    for (const [path, method] of [['/devices/share', 'post'], ['/devices/share/{id}', 'patch']]) {
      const operation = doc.paths[path][method]
      expect({ path, types: Object.keys(operation.requestBody!.content) }).toEqual({ path, types: ['application/json'] })
      expect(operation.requestBody!.content['application/json'].schema.type).toBe('object')
      expect(Object.keys(operation.responses)).toContain('413')
    }
    expect(doc.paths['/devices/share'].post.requestBody!.content['application/json'].schema.required).toEqual(['devices', 'ttl'])
    expect(text).not.toContain('multipart/form-data')
    expect(text).not.toContain('application/x-www-form-urlencoded')
  })

  test('the docs page loads its assets from this server, not a CDN', async () => {
    const page = await (await world.call('GET', '/openapi')).text()
    expect(page).not.toMatch(/unpkg|jsdelivr|cdn\./)
    const scripts = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]).filter((u) => u.endsWith('.js') || u.endsWith('.css'))
    expect(scripts.length).toBeGreaterThanOrEqual(2)
    for (const asset of scripts) {
      expect(asset).toStartWith('/')
      const res = await world.call('GET', asset)
      expect(res.status).toBe(200)
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(10_000)
    }
  })

  test('the docs page shows no raw text of the description', async () => {
    const page = await (await world.call('GET', '/openapi')).text()
    expect(page).not.toContain('realm="tracker"')
    expect(page).not.toContain('<key>')
    // every attribute of every tag is a well-formed name="value"
    for (const [tag] of page.matchAll(/<[a-z]+\s[^>]*>/g)) expect(tag).toMatch(/^<[a-z]+(\s+[a-z-]+(="[^"<]*")?)*\s*\/?>$/)
  })

  test('whatever the title and description hold, the page escapes them', async () => {
    const app = new Elysia().use(apiDocs('Quotes "here" and <b>tags</b> & ampersands.\n\nMore.', '1.0.0'))
    const page = await (await app.handle(new Request('http://localhost/openapi'))).text()
    expect(page).toContain('content="Quotes &#34;here&#34; and &#60;b&#62;tags&#60;/b&#62; &#38; ampersands."')
    expect(page).not.toContain('<b>')
  })
})
