/**
 * The shared-link page in a real browser: Debian's chromium driven by playwright-core, against a
 * real server on 127.0.0.1. The tile server is an address nothing listens on, as on an offline
 * gateway: markers and the track must draw anyway. Screenshots go to /tmp for a human to look at.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { chromium, type Browser, type Page } from 'playwright-core'
import { systemClock } from '../../src/clock'
import { loadConfig } from '../../src/config'
import { LivePositions } from '../../src/ingest/live'
import { baseDataset, ids, keys, type EngineWorld, openWorld } from '../support/world'

const CHROMIUM = '/usr/bin/chromium'
const hasChromium = existsSync(CHROMIUM)
if (!hasChromium) console.warn(`skipping the share page browser test: ${CHROMIUM} is missing (apt-get install chromium)`)

let world: EngineWorld
let browser: Browser
let base: string
const live = new LivePositions()

/** Truck 1's last half hour today (or since midnight), driving east from Paris. */
function todaysTrack() {
  const now = Math.floor(Date.now() / 1000)
  const midnight = new Date()
  midnight.setHours(0, 0, 0, 0)
  const start = Math.max(Math.floor(midnight.getTime() / 1000), now - 1800)
  const step = Math.max(1, Math.floor((now - 30 - start) / 20))
  return Array.from({ length: 20 }, (_, i) => ({ device: ids.truck1, timestamp: start + i * step, latitude: 48.85 + i * 0.002, longitude: 2.3 + i * 0.004, speed: 42 }))
}

/** Truck 2's last fix: yesterday noon, where the dataset puts it; its record is written later, by the import. */
const truck2Fix = (() => {
  const noon = new Date()
  noon.setDate(noon.getDate() - 1)
  noon.setHours(12, 0, 0, 0)
  return { device: ids.truck2, timestamp: Math.floor(noon.getTime() / 1000), latitude: 45.75, longitude: 4.85, speed: 0 }
})()

beforeAll(async () => {
  if (!hasChromium) return
  world = await openWorld(
    {
      ...baseDataset(),
      // Van 1: a location from the file, and no fix at all
      devices: baseDataset().devices.map((d) => (d.id === ids.van1 ? { ...d, location: [45.5, 5.5] } : d)),
      positions: [...todaysTrack(), truck2Fix],
    },
    { clock: systemClock, live, config: loadConfig({ TILE_URL: 'http://127.0.0.1:9/{z}/{x}/{y}.png' }) },
  )
  world.app.listen({ port: 0, hostname: '127.0.0.1' })
  base = `http://127.0.0.1:${world.app.server!.port}`
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
}, 30_000)

afterAll(async () => {
  await browser?.close()
  await world?.app.stop(true)
  await world?.close()
})

async function createLink(devices = [ids.truck1, ids.truck2]): Promise<{ id: string; url: string }> {
  const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices, ttl: 3600 } })
  const link = (await res.json()) as { id: string; original_url: string }
  const url = new URL(link.original_url)
  return { id: link.id, url: base + url.pathname + url.search }
}

/** Errors the page raised, and console errors other than the (expected) unreachable tiles. */
function watchErrors(page: Page): string[] {
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`))
  page.on('console', (message) => {
    if (message.type() !== 'error') return
    const text = message.text()
    if (text.includes('ERR_CONNECTION_REFUSED') || text.includes('Failed to load resource')) return
    errors.push(`console: ${text}`)
  })
  return errors
}

const key = (id: string) => world.deviceKey(id)

describe.skipIf(!hasChromium)('the shared-link page in chromium', () => {
  test('shows the markers, the list and the track, follows a live fix, and says so when the link is revoked', async () => {
    const link = await createLink()
    const page = await browser.newPage({ viewport: { width: 1200, height: 760 } })
    const errors = watchErrors(page)

    const response = await page.goto(link.url)
    expect(response!.status()).toBe(200)
    expect(response!.headers()['referrer-policy']).toBe('no-referrer')

    const rows = page.locator('#devices .device')
    await rows.first().waitFor()
    expect(await rows.count()).toBe(2)
    expect(await page.locator('#devices .alias').allTextContents()).toEqual(['Truck 1', 'Truck 2'])
    await page.locator('.leaflet-marker-icon').nth(1).waitFor()
    expect(await page.locator('.leaflet-marker-icon').count()).toBe(2)
    expect(await page.locator('.leaflet-tooltip').allTextContents()).toEqual(expect.arrayContaining(['Truck 1', 'Truck 2']))
    await page.locator('path.leaflet-interactive').first().waitFor() // today's track of truck 1
    const truck1 = rows.filter({ hasText: 'Truck 1' })
    await expect(truck1.locator('.speed').textContent()).resolves.toBe('42 km/h')
    await page.locator('#status.live').waitFor()
    expect(await page.locator('#expiry').textContent()).toStartWith('Shared until')
    // Truck 2 has no track today: its "Updated" is its newest fix, yesterday, not the import just now
    const truck2Updated = rows.filter({ hasText: 'Truck 2' }).locator('.updated')
    await page.waitForFunction(() => document.querySelectorAll('#devices .updated[datetime]').length === 2)
    expect(await truck2Updated.getAttribute('datetime')).toBe(new Date(truck2Fix.timestamp * 1000).toISOString())
    expect(await truck2Updated.textContent()).toMatch(/^Updated .+ \((\d+ h|1 d) ago\)$/)

    // a new fix arrives live: the speed, the time and the marker follow it
    const markerBefore = await page.locator('.leaflet-marker-icon').first().getAttribute('style')
    live.publish({ deviceKey: await key(ids.truck1), timestamp: Math.floor(Date.now() / 1000), latitude: 48.9, longitude: 2.42, speed: 77, course: 90 })
    await page.waitForFunction(() => document.querySelector('#devices .device .speed')?.textContent === '77 km/h')
    expect(await truck1.locator('.updated').textContent()).toContain('just now')
    expect(await page.locator('.leaflet-marker-icon').first().getAttribute('style')).not.toBe(markerBefore)
    await page.screenshot({ path: '/tmp/share-page.png' })

    // on a phone: the list goes below the map
    await page.setViewportSize({ width: 390, height: 844 })
    const map = await page.locator('#map').boundingBox()
    const list = await page.locator('.panel').boundingBox()
    expect(list!.y).toBeGreaterThanOrEqual(map!.y + map!.height - 1)
    await page.screenshot({ path: '/tmp/share-page-phone.png' })

    // revoked while open: the stream ends, the page finds the link gone and says so
    expect((await world.call('DELETE', `/devices/share/${link.id}`, { token: keys.alice })).status).toBe(204)
    await page.locator('#ended').waitFor({ state: 'visible', timeout: 10_000 })
    expect(await page.locator('#view').isHidden()).toBe(true)

    // and opened again, the server answers the ended page
    const again = await page.goto(link.url)
    expect(again!.status()).toBe(410)
    expect(await page.locator('h1').textContent()).toBe('This shared link has ended')
    await page.screenshot({ path: '/tmp/share-page-ended.png' })

    expect(errors).toEqual([])
    await page.close()
  }, 60_000)

  test('a device with a location but no fix says no time: never the time its record was written', async () => {
    const link = await createLink([ids.van1])
    const page = await browser.newPage()
    const errors = watchErrors(page)
    await page.goto(link.url)
    await page.locator('#status.live').waitFor()
    expect(await page.locator('.leaflet-marker-icon').count()).toBe(1)
    const updated = page.locator('#devices .updated')
    expect(await updated.textContent()).toBe('')
    expect(await updated.getAttribute('datetime')).toBeNull()
    expect(errors).toEqual([])
    await page.close()
  }, 30_000)
})
