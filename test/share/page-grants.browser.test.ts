/**
 * The shared-link page honours what the link grants (issue 20 item 8), in a real chromium against a
 * real server on 127.0.0.1: with history, a day picker and the chosen day's route; with events, the
 * events list; the sharing account's name on the page; without those permissions, neither part.
 * Screenshots go to test-output/ at 1280×800 and 390×844.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync } from 'node:fs'
import { chromium, type Browser, type Page } from 'playwright-core'
import { systemClock } from '../../src/clock'
import { loadConfig } from '../../src/config'
import { PERMISSION } from '../../src/share/permissions'
import { baseDataset, ids, keys, type EngineWorld, openWorld } from '../support/world'

const CHROMIUM = '/usr/bin/chromium'
const hasChromium = existsSync(CHROMIUM)
if (!hasChromium) console.warn(`skipping the share page grants browser test: ${CHROMIUM} is missing`)
const OUT = 'test-output'

let world: EngineWorld
let browser: Browser
let base: string

const noonOf = (daysAgo: number) => {
  const noon = new Date()
  noon.setDate(noon.getDate() - daysAgo)
  noon.setHours(12, 0, 0, 0)
  return Math.floor(noon.getTime() / 1000)
}
const YESTERDAY_NOON = noonOf(1)
const yesterdayIso = (() => {
  const d = new Date(YESTERDAY_NOON * 1000)
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`
})()

/** Truck 1 yesterday from 12:00: 20 fixes driving north-east from Lyon, a minute apart. Nothing today. */
const yesterdaysTrack = Array.from({ length: 20 }, (_, i) => ({
  device: ids.truck1,
  timestamp: YESTERDAY_NOON + i * 60,
  latitude: 45.75 + i * 0.003,
  longitude: 4.85 + i * 0.004,
  speed: 50,
}))

beforeAll(async () => {
  if (!hasChromium) return
  mkdirSync(OUT, { recursive: true })
  const now = Math.floor(Date.now() / 1000)
  world = await openWorld(
    {
      ...baseDataset(),
      positions: yesterdaysTrack,
      events: [
        // today's, even just after midnight
        { device: ids.truck1, alarm_code: 'sos', coordinates: [45.76, 4.86], timestamp: Math.max(now - 600, Math.floor(new Date().setHours(0, 0, 0, 0) / 1000)) },
        { device: ids.truck1, alarm_code: 'overspeed', coordinates: [45.77, 4.87], timestamp: YESTERDAY_NOON + 300 },
      ],
    },
    { clock: systemClock, config: loadConfig({ TILE_URL: 'http://127.0.0.1:9/{z}/{x}/{y}.png' }) },
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

async function linkUrl(acl: string[]): Promise<string> {
  const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1, ids.truck2], ttl: 3600, acl } })
  expect(res.status).toBe(200)
  const url = new URL(((await res.json()) as { original_url: string }).original_url)
  return base + url.pathname + url.search
}

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

describe.skipIf(!hasChromium)('the shared-link page shows what the link grants', () => {
  test('history and events: the day picker draws yesterday\'s route, the events list shows, the company is named', async () => {
    const url = await linkUrl([PERMISSION.location, PERMISSION.history, PERMISSION.events])
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
    const errors = watchErrors(page)
    await page.goto(url)
    await page.locator('#status.live').waitFor()

    expect(await page.locator('h1').textContent()).toContain('Acme Logistics')
    expect(await page.title()).toContain('Acme Logistics')
    // today: truck 1 drove nothing, so no route yet
    await expect(page.locator('#day-picker').isVisible()).resolves.toBe(true)
    await page.waitForFunction(() => document.getElementById('events-list')!.children.length > 0)
    expect(await page.locator('#events-list li .what').allTextContents()).toEqual(['SOS'])
    expect(await page.locator('#events-list li .who').allTextContents()).toEqual(['Truck 1'])
    expect(await page.locator('path.leaflet-interactive').count()).toBe(0)

    // yesterday: its route is drawn, and its events listed
    await page.locator('#day').fill(yesterdayIso)
    await page.locator('path.leaflet-interactive').first().waitFor()
    await page.waitForFunction(() => document.querySelector('#events-list li .what')?.textContent === 'Overspeed')
    expect(await page.locator('#events-list li').count()).toBe(1)
    expect(await page.locator('#day-note').textContent()).toBe('')
    await page.screenshot({ path: `${OUT}/share-grants-history-1280.png` })

    await page.setViewportSize({ width: 390, height: 844 })
    await page.waitForTimeout(200)
    await page.screenshot({ path: `${OUT}/share-grants-history-390.png`, fullPage: true })
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)

  test('location only: neither the day picker nor the events list', async () => {
    const url = await linkUrl([PERMISSION.location])
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } })
    const errors = watchErrors(page)
    await page.goto(url)
    await page.locator('#status.live').waitFor()
    expect(await page.locator('#devices .device').count()).toBe(2)
    expect(await page.locator('#day-picker').isVisible()).toBe(false)
    expect(await page.locator('#events').isVisible()).toBe(false)
    expect(await page.locator('h1').textContent()).toContain('Acme Logistics')
    await page.screenshot({ path: `${OUT}/share-grants-location-390.png` })
    await page.setViewportSize({ width: 1280, height: 800 })
    await page.screenshot({ path: `${OUT}/share-grants-location-1280.png` })
    expect(errors).toEqual([])
    await page.close()
  }, 30_000)
})
