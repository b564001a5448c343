/**
 * The History view's chart library as the server serves it: uPlot is a file of its own, named by
 * its content hash, which the entry script imports when History first draws a chart, so the first
 * load does not carry it. The view itself is tried in chromium in history.browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { openWorld, type EngineWorld } from '../support/world'

let world: EngineWorld
beforeAll(async () => {
  world = await openWorld()
})
afterAll(() => world.close())

const get = (path: string, headers: Record<string, string> = {}) => world.app.handle(new Request(`http://localhost${path}`, { headers }))

describe('the console bundle and History', () => {
  test('uPlot is not in the first load: the entry script imports it as a separate, content-hashed file', async () => {
    const html = await (await get('/')).text()
    const entry = /<script[^>]* src="(console\/assets\/[^"]+)"/.exec(html)![1]
    const main = await (await get(`/${entry}`)).text()
    // uPlot's own class names are in its file, not in the entry
    expect(main.includes('u-over')).toBe(false)
    const imported = /import\("\.\/(uPlot[^"]+\.js)"\)/.exec(main)
    expect(imported).not.toBeNull()

    const chunk = await get(`/console/assets/${imported![1]}`, { 'accept-encoding': 'gzip' })
    expect(chunk.status).toBe(200)
    expect(chunk.headers.get('content-type')).toStartWith('text/javascript')
    expect(chunk.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(chunk.headers.get('content-encoding')).toBe('gzip')
    const gzipped = new Uint8Array(await chunk.arrayBuffer())
    expect(new TextDecoder().decode(Bun.gunzipSync(gzipped))).toContain('u-over')
    console.log(`uPlot, fetched when History draws its first chart: ${(gzipped.byteLength / 1024).toFixed(1)} KB gzipped`)
  })

  test("uPlot's styles come with the console's one stylesheet (a split script brings none of its own)", async () => {
    const html = await (await get('/')).text()
    const styles = [...html.matchAll(/<link rel="stylesheet" href="([^"]+)"/g)].map((m) => m[1])
    expect(styles).toHaveLength(1)
    expect(await (await get(`/${styles[0]}`)).text()).toContain('.uplot')
  })
})
