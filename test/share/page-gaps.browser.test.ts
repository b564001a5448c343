/**
 * The shared-link page draws no line across a reporting gap, in a real browser (Debian's chromium)
 * against the app on 127.0.0.1. Truck 1's day is bus 304 (Limerick, 2019-02-18, a real recording)
 * with 25 minutes of fixes cut out and the rest five hours later: it reappeared 3.5 km on. The
 * page's clock is that evening, so that day is its "today". Its track is two lines, not one; a
 * live fix after another silence of over an hour starts a third. Screenshots at 1280×800 and 390×844.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { systemClock } from '../../src/clock'
import { loadConfig } from '../../src/config'
import { LivePositions } from '../../src/ingest/live'
import { chromiumPresent, launchChromium, OUTPUT, routeOutside } from '../console/support'
import { baseDataset, ids, keys, type EngineWorld, openWorld } from '../support/world'
import { BUS304_GPX, readGpx } from '../track/recordings'

const hasChromium = chromiumPresent('the share page gap browser test')

const bus = readGpx(BUS304_GPX)
const t0 = bus[0].timestamp
const CUT_FROM = t0 + 1200
const CUT_TO = t0 + 2700
const day = bus.filter((p) => p.timestamp < CUT_FROM || p.timestamp >= CUT_TO).map((p) => (p.timestamp >= CUT_TO ? { ...p, timestamp: p.timestamp + 5 * 3600 } : p))
const last = day[day.length - 1]
/** the page's "now": that evening in Paris */
const EVENING = new Date('2019-02-18T20:00:00+01:00')

let world: EngineWorld
let browser: Browser
let base: string
const live = new LivePositions()

beforeAll(async () => {
  if (!hasChromium) return
  world = await openWorld(
    { ...baseDataset(), positions: day.map((p) => ({ device: ids.truck1, timestamp: p.timestamp, latitude: p.latitude, longitude: p.longitude, speed: 30 })) },
    { clock: systemClock, live, config: loadConfig({ TILE_URL: 'http://tiles.test/{z}/{x}/{y}.png' }) },
  )
  world.app.listen({ port: 0, hostname: '127.0.0.1' })
  base = `http://127.0.0.1:${world.app.server!.port}`
  browser = await launchChromium()
}, 30_000)

afterAll(async () => {
  await browser?.close()
  await world?.app.stop(true)
  await world?.close()
})

const key = (id: string) => world.deviceKey(id)
/** the parts of truck 1's line on the map (one "M" a part) */
const trackParts = async (page: Page) => ((await page.locator('path.leaflet-interactive').first().getAttribute('d')) ?? '').split('M').length - 1

describe.skipIf(!hasChromium)('the shared-link page and reporting gaps', () => {
  test("today's track is not joined across the gap; a live fix after an hour's silence starts a new line", async () => {
    const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })
    const link = new URL(((await res.json()) as { original_url: string }).original_url)
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: 'Europe/Paris', deviceScaleFactor: 1 })
    const leaks: string[] = []
    await routeOutside(context, base, leaks)
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.clock.setFixedTime(EVENING)

    await page.goto(base + link.pathname + link.search)
    await page.locator('path.leaflet-interactive').first().waitFor()
    await page.locator('#status.live').waitFor()
    // the route arrives after the stream's first fix may have begun a line: wait for the route's line
    await page.waitForFunction(() => document.querySelectorAll('path.leaflet-interactive').length === 1 && (document.querySelector('path.leaflet-interactive')?.getAttribute('d') ?? '').split('M').length - 1 >= 2)
    expect(await trackParts(page)).toBe(2)
    await page.waitForTimeout(500)
    await page.screenshot({ path: join(OUTPUT, 'share-gap-desktop.png') })

    // silent 2 h 30 min, then back near where the day began (in view: Leaflet leaves out what is not):
    // a new line from there, not a stroke across the silence
    const [there, further] = [bus[300], bus[420]]
    live.publish({ deviceKey: await key(ids.truck1), timestamp: last.timestamp + 9000, latitude: there.latitude, longitude: there.longitude, speed: 40, course: 0 })
    await page.waitForFunction(() => document.querySelector('#devices .device .speed')?.textContent === '40 km/h')
    const before = (await page.locator('path.leaflet-interactive').first().getAttribute('d'))!
    // a part of one point draws nothing: the line is as it was, not stretched to the new fix
    expect(await trackParts(page)).toBe(2)
    // the next one, 30 s later, continues the new part: a third line of its own
    live.publish({ deviceKey: await key(ids.truck1), timestamp: last.timestamp + 9030, latitude: further.latitude, longitude: further.longitude, speed: 41, course: 0 })
    await page.waitForFunction(() => document.querySelector('#devices .device .speed')?.textContent === '41 km/h')
    expect(await trackParts(page)).toBe(3)
    const after = (await page.locator('path.leaflet-interactive').first().getAttribute('d'))!
    expect(after.startsWith(before)).toBe(true)
    expect(after.slice(before.length)).toMatch(/^M[\d.-]+ [\d.-]+L[\d.-]+ [\d.-]+$/)

    await page.setViewportSize({ width: 390, height: 844 })
    await page.waitForTimeout(500)
    await page.screenshot({ path: join(OUTPUT, 'share-gap-phone.png') })
    expect(errors).toEqual([])
    expect(leaks).toEqual([])
    await context.close()
  }, 60_000)
})
