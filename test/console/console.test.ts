/**
 * The console as the server serves it: the page at `/`, its content-hashed assets (gzipped when
 * the browser accepts it), its CSP, the size budget of the first load, and what the app reads
 * from the API that was added for it (the heading on the live stream). The app itself is tried in
 * a browser in console.browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'
import { LivePositions } from '../../src/ingest/live'
import { baseDataset, ids, keys, openWorld, problem, type EngineWorld } from '../support/world'

/** The budget of the issue: the first load's script, gzipped. */
const SCRIPT_BUDGET_BYTES = 300 * 1024

let world: EngineWorld
const live = new LivePositions()
beforeAll(async () => {
  world = await openWorld(undefined, { live, config: loadConfig({ TILE_URL: 'https://{s}.tiles.example.net/{z}/{x}/{y}.png' }) })
})
afterAll(() => world.close())

const get = (path: string, headers: Record<string, string> = {}) => world.app.handle(new Request(`http://localhost${path}`, { headers }))

async function page() {
  const res = await get('/')
  const html = await res.text()
  const scripts = [...html.matchAll(/<script[^>]* src="([^"]+)"/g)].map((m) => m[1])
  const styles = [...html.matchAll(/<link rel="stylesheet" href="([^"]+)"/g)].map((m) => m[1])
  return { res, html, scripts, styles }
}

describe('the console at /', () => {
  test('is an HTML page with a strict CSP that allows only this server and the tile server', async () => {
    const { res, html, scripts, styles } = await page()
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const csp = res.headers.get('content-security-policy')!
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("script-src 'self';")
    expect(csp).toContain("connect-src 'self';")
    expect(csp).toContain('img-src \'self\' data: https://*.tiles.example.net;')
    expect(csp).not.toContain('unsafe')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(html).toContain('data-tile-url="https://{s}.tiles.example.net/{z}/{x}/{y}.png"')
    // relative links: APP_URL may carry a path prefix
    expect(scripts).toEqual([expect.stringMatching(/^console\/assets\/main-[a-z0-9]+\.js$/)])
    expect(styles).toEqual([expect.stringMatching(/^console\/assets\/main-[a-z0-9]+\.css$/)])
    // nothing from elsewhere: no CDN
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//)
  })

  test('serves its assets content-hashed for a year, gzipped when the browser accepts it', async () => {
    const { scripts, styles } = await page()
    const plain = await get(`/${scripts[0]}`)
    expect(plain.status).toBe(200)
    expect(plain.headers.get('content-type')).toStartWith('text/javascript')
    expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(plain.headers.get('content-encoding')).toBeNull()
    const source = await plain.text()
    expect(source).toContain('devices/stream')

    const gzipped = await get(`/${scripts[0]}`, { 'accept-encoding': 'gzip, deflate, br' })
    expect(gzipped.headers.get('content-encoding')).toBe('gzip')
    expect(gzipped.headers.get('vary')).toBe('accept-encoding')
    const bytes = new Uint8Array(await gzipped.arrayBuffer())
    expect(new TextDecoder().decode(Bun.gunzipSync(bytes))).toBe(source)

    const css = await get(`/${styles[0]}`)
    expect(css.headers.get('content-type')).toStartWith('text/css')
    expect(await css.text()).toContain('.leaflet-container')
  })

  test('the first load stays under 300 KB of script, gzipped', async () => {
    const { scripts } = await page()
    let total = 0
    for (const src of scripts) total += (await (await get(`/${src}`, { 'accept-encoding': 'gzip' })).arrayBuffer()).byteLength
    console.log(`console first load: ${(total / 1024).toFixed(1)} KB of script gzipped (budget ${SCRIPT_BUDGET_BYTES / 1024} KB)`)
    expect(total).toBeGreaterThan(10_000)
    expect(total).toBeLessThan(SCRIPT_BUDGET_BYTES)
  })

  test('an unknown asset is a 404 problem, and an asset name cannot reach outside the bundle', async () => {
    await problem(await get('/console/assets/nope.js'), 404)
    await problem(await get('/console/assets/constructor'), 404)
    expect((await get('/console/assets/..%2Fpackage.json')).status).toBe(404)
  })

  test('the OpenAPI document says that / is the console', async () => {
    const doc = (await (await get('/openapi/json')).json()) as { paths: Record<string, { get?: { tags?: string[]; description?: string } }> }
    expect(doc.paths['/']?.get?.tags).toEqual(['Console'])
    expect(doc.paths['/']?.get?.description).toContain('POST /session')
    expect(Object.keys(doc.paths).some((p) => p.startsWith('/console/assets'))).toBe(false)
  })
})

describe('the live stream, as the console reads it', () => {
  test('a fix carries its course, so the marker can point where the device heads', async () => {
    const key = await world.deviceKey(ids.truck1)
    const res = await world.call('GET', '/devices/stream', { token: keys.alice })
    expect(res.status).toBe(200)
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
    live.publish({ deviceKey: key, timestamp: 1764000100, latitude: 48.9, longitude: 2.4, speed: 50, course: 135 })
    let text = ''
    while (!text.includes('"course":135')) {
      const chunk = await reader.read()
      if (chunk.done) break
      text += chunk.value
    }
    await reader.cancel()
    const block = text.split('\n\n').find((b) => b.includes('"course":135'))!
    expect(JSON.parse(block.split('data:')[1])).toEqual({ id: ids.truck1, latitude: 48.9, longitude: 2.4, speed: 50, course: 135, timestamp: 1764000100 })
  })
})

describe('the live stream of a large fleet', () => {
  test('starts with the newest fix of each of 1,500 devices, and stays open', async () => {
    const base = baseDataset()
    const count = 1500
    const uuid = (i: number) => `0f100000-0000-4000-8000-${String(i).padStart(12, '0')}`
    const big = await openWorld({
      ...base,
      devices: [
        ...base.devices,
        ...Array.from({ length: count }, (_, i) => ({ id: uuid(i), account: ids.acme, model: ids.bare, groups: [ids.vans], alias: `Van ${i}`, serial: `BIG-${i}`, state: 'stopped' })),
      ],
      positions: Array.from({ length: count }, (_, i) => ({ device: uuid(i), timestamp: 1764000000 + i, latitude: 45 + i / 1e4, longitude: 5, speed: 0 })),
    })
    try {
      const res = await big.call('GET', '/devices/stream', { token: keys.bob })
      expect(res.status).toBe(200)
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
      const seen = new Set<string>()
      let text = ''
      let ended = false
      while (seen.size < count) {
        const chunk = await reader.read()
        if (chunk.done) {
          ended = true
          break
        }
        text += chunk.value
        const blocks = text.split('\n\n')
        text = blocks.pop()!
        for (const block of blocks) if (block.startsWith('event: fix')) seen.add(JSON.parse(block.split('data: ')[1]).id)
      }
      expect({ ended, seen: seen.size }).toEqual({ ended: false, seen: count })
      await reader.cancel()
    } finally {
      await big.close()
    }
  })
})
