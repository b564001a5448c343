import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeWorld, type World } from '../support/world'

let world: World
beforeAll(() => {
  world = makeWorld()
})
afterAll(() => world.close())

describe('OpenAPI', () => {
  test('the document is OpenAPI 3.1 and every route declares its error responses', async () => {
    const res = await world.call('GET', '/openapi/json')
    expect(res.status).toBe(200)
    const doc = (await res.json()) as { openapi: string; info: { description: string }; paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }
    expect(doc.openapi).toStartWith('3.1')
    expect(doc.info.description).toContain('problem details')
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/devices', '/devices/{id}', '/devices/{id}/commands']))
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const statuses = Object.keys(operation.responses ?? {})
        expect({ route: `${method} ${path}`, hasSuccess: statuses.some((s) => s.startsWith('2') || s.startsWith('3')) }).toEqual({ route: `${method} ${path}`, hasSuccess: true })
        if (path.startsWith('/devices')) expect({ route: `${method} ${path}`, statuses }).toEqual({ route: `${method} ${path}`, statuses: expect.arrayContaining(['401']) })
      }
    }
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
})
