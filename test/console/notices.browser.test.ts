/**
 * Notices that do not bury the screen (issue 20 item 6), in Debian's chromium against the real
 * server in a child process. Events come in over OsmAnd as a phone sends them. Passing news the
 * server derives (entering a geofence) fades after 8 s, on the page's clock (playwright's, so the
 * test does not sleep); a device's alarm stays until its Acknowledge button is pressed, and the
 * acknowledgement holds over a reload. At most four are stacked on a desktop, alarms first and
 * newest first, then "+N more" opens the rest; the Events page leaves them a column, so no row of
 * its table is under a notice. On a phone two are stacked across the bottom, small. Screenshots at
 * 1280×800 and 390×844 go to test-output/.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type Browser, type Page } from 'playwright-core'
import { chromiumPresent, launchChromium, shot, signIn, startConsoleServer, watchedPage, type ConsoleServer } from './support'
import { baseDataset, ids, keys } from '../support/world'

const hasChromium = chromiumPresent('the notices browser test')

const IMEI = { truck1: '359710049095001', truck2: '359710049095002', van1: '359710049095003' }
const YARD = { lat: 48.85, lon: 2.35 }
/** the console's FADE_AFTER_MS */
const FADE_AFTER_MS = 8_000

let server: ConsoleServer
let browser: Browser

beforeAll(async () => {
  if (!hasChromium) return
  server = await startConsoleServer({ name: 'notices-browser', dataset: baseDataset(), signIn: [ids.alice, ids.dana], ports: { osmand: true } })
  browser = await launchChromium()
  const res = await fetch(`${server.base}/geofences`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keys.dana}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Yard', area: { type: 'Circle', center: [YARD.lat, YARD.lon], radius: 300 } }),
  })
  expect(res.status).toBe(201)
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

const seconds = () => Math.floor(Date.now() / 1000)

/** an OsmAnd report as Traccar Client sends it, with an alarm when given */
async function report(imei: string, timestamp: number, options: { alarm?: string; lat?: number; lon?: number } = {}) {
  const query = new URLSearchParams({ id: imei, lat: String(options.lat ?? 45.75), lon: String(options.lon ?? 4.85), timestamp: String(timestamp), speed: '0' })
  if (options.alarm) query.set('alarm', options.alarm)
  const res = await fetch(`http://127.0.0.1:${server.ports.osmand}/?${query}`, { method: 'POST' })
  expect(res.status).toBe(200)
}

const titles = (page: Page) => page.locator('.notice .notice-title').allTextContents()
const waitForNotices = (page: Page, count: number) => page.waitForFunction((n) => document.querySelectorAll('.notice').length === n, count)

type Box = { x: number; y: number; width: number; height: number }
const overlap = (a: Box, b: Box) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height

describe.skipIf(!hasChromium)('notices in chromium', () => {
  test('desktop: passing news fades, alarms stay until acknowledged (also over a reload), four stacked with +N more, beside the Events table', async () => {
    const { context, page, watch } = await watchedPage(browser, server.base, { viewport: { width: 1280, height: 800 }, timezoneId: 'UTC' })
    // the page's clock: time flows as usual until the test moves it on
    await page.clock.install()
    await signIn(page, server.base, 'alice')
    // the stream is open (alarms are not replayed), then the Events page in the same document
    await page.locator('.live-status.live').waitFor()
    await page.getByRole('link', { name: /^Events/ }).first().click()
    await page.locator('.events-table, .events-page .empty').first().waitFor()

    // --- an SOS, then Truck 2 enters the Yard: the alarm is stacked first, the passing news under it
    const t0 = seconds() - 120
    await report(IMEI.truck1, t0, { alarm: 'sos' })
    await waitForNotices(page, 1)
    await report(IMEI.truck2, t0 + 1, { lat: YARD.lat, lon: YARD.lon })
    await waitForNotices(page, 2)
    expect(await titles(page)).toEqual(['SOS', 'Entered Yard'])
    expect(await page.locator('.notice.passing .notice-title').allTextContents()).toEqual(['Entered Yard'])
    expect(await page.getByRole('button', { name: 'Acknowledge SOS from Truck 1' }).count()).toBe(1)
    expect(await page.getByRole('button', { name: 'Dismiss Entered Yard from Truck 2' }).count()).toBe(1)

    // --- just before its time the passing notice is there; after it, gone; the alarm still there a minute on
    await page.clock.fastForward(FADE_AFTER_MS - 1_000)
    expect(await titles(page)).toEqual(['SOS', 'Entered Yard'])
    await page.clock.fastForward(2_000)
    await waitForNotices(page, 1)
    await page.clock.fastForward(60_000)
    expect(await titles(page)).toEqual(['SOS'])

    // --- five more alarms (six in all): four stacked, alarms newest first, and "+2 more"
    const more = [
      [IMEI.truck2, 'powerCut'],
      [IMEI.van1, 'tampering'],
      [IMEI.truck1, 'lowBattery'],
      [IMEI.truck2, 'vibration'],
      [IMEI.van1, 'sos'],
    ] as const
    for (const [i, [imei, alarm]] of more.entries()) {
      await report(imei, t0 + 10 + i, { alarm })
      await page.waitForFunction((n) => document.querySelectorAll('.notice').length === Math.min(n, 4), i + 2)
    }
    await page.getByRole('button', { name: '+2 more' }).waitFor()
    expect(await titles(page)).toEqual(['SOS', 'Vibration', 'Low battery', 'Tampering'])
    // the Events page lists the six, and no row of its table is under the stack
    await page.waitForFunction(() => document.querySelectorAll('.events-table tbody tr').length >= 7)
    const stackBox = (await page.locator('.notices').boundingBox())!
    const tableBox = (await page.locator('.events-table').boundingBox())!
    expect(overlap(stackBox, tableBox)).toBe(false)
    for (const row of await page.locator('.events-table tbody tr').all()) expect(overlap(stackBox, (await row.boundingBox())!)).toBe(false)
    expect(tableBox.width).toBeGreaterThan(700)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280)
    await shot(page, 'notices-events-desktop')

    // --- "+2 more" opens the rest in place; "Show fewer" closes them
    await page.getByRole('button', { name: '+2 more' }).click()
    await waitForNotices(page, 6)
    expect(await titles(page)).toEqual(['SOS', 'Vibration', 'Low battery', 'Tampering', 'Power cut', 'SOS'])
    await shot(page, 'notices-expanded-desktop')
    await page.getByRole('button', { name: 'Show fewer' }).click()
    await waitForNotices(page, 4)

    // --- acknowledged: gone, and it stays gone over a reload; the ones nobody acknowledged come back
    await page.getByRole('button', { name: 'Acknowledge SOS from Van 1' }).click()
    await page.getByRole('button', { name: '+1 more' }).waitFor()
    expect(await titles(page)).toEqual(['Vibration', 'Low battery', 'Tampering', 'Power cut'])
    await page.reload()
    await page.locator('.events-table').waitFor()
    await waitForNotices(page, 4)
    expect(await titles(page)).toEqual(['Vibration', 'Low battery', 'Tampering', 'Power cut'])
    await page.getByRole('button', { name: '+1 more' }).waitFor()
    // the devices' names, once the list has loaded
    await page.waitForFunction(() => Array.from(document.querySelectorAll('.notice .notice-alias')).every((e) => e.textContent !== 'A device'))
    expect(await page.locator('.notice .notice-alias').allTextContents()).toEqual(['Truck 2', 'Truck 1', 'Van 1', 'Truck 2'])

    // --- the live map: the stack sits over the map, not over the device list
    await page.getByRole('link', { name: /^Live map/ }).first().click()
    await page.locator('.map-wrap').waitFor()
    const mapBox = (await page.locator('.map-wrap').boundingBox())!
    const onMap = (await page.locator('.notices').boundingBox())!
    expect(onMap.x).toBeGreaterThanOrEqual(mapBox.x)
    await shot(page, 'notices-map-desktop')

    await page.getByRole('button', { name: 'Acknowledge all' }).click()
    await waitForNotices(page, 0)
    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 90_000)

  test('desktop Administration: the devices table beside the stack, not under it', async () => {
    const { context, page, watch } = await watchedPage(browser, server.base, { viewport: { width: 1280, height: 800 }, timezoneId: 'UTC' })
    await signIn(page, server.base, 'dana')
    await page.locator('.live-status.live').waitFor()
    await page.getByRole('link', { name: /^Administration/ }).first().click()
    const table = page.locator('main table').first()
    await table.waitFor()
    const t0 = seconds() - 30
    for (const [i, alarm] of ['sos', 'powerCut', 'tampering', 'sos', 'lowBattery'].entries()) await report(i % 2 ? IMEI.truck2 : IMEI.van1, t0 + i, { alarm })
    await page.getByRole('button', { name: '+1 more' }).waitFor()
    const stackBox = (await page.locator('.notices').boundingBox())!
    expect(overlap(stackBox, (await table.boundingBox())!)).toBe(false)
    for (const row of await page.locator('main table tr').all()) expect(overlap(stackBox, (await row.boundingBox())!)).toBe(false)
    await shot(page, 'notices-admin-desktop')
    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 60_000)

  test('phone: two stacked across the bottom, small, with the count of the rest', async () => {
    const { context, page, watch } = await watchedPage(browser, server.base, { viewport: { width: 390, height: 844 }, timezoneId: 'UTC' })
    await signIn(page, server.base, 'alice')
    await page.locator('.live-status.live').waitFor()
    const t0 = seconds() - 60
    await report(IMEI.truck1, t0, { alarm: 'sos' })
    await waitForNotices(page, 1)
    await report(IMEI.truck2, t0 + 1, { alarm: 'powerCut' })
    await waitForNotices(page, 2)
    await report(IMEI.van1, t0 + 2, { alarm: 'tampering' })
    await page.getByRole('button', { name: '+1 more' }).waitFor()
    expect(await titles(page)).toEqual(['Tampering', 'Power cut'])
    const box = (await page.locator('.notices').boundingBox())!
    expect(box.x).toBeGreaterThanOrEqual(0)
    expect(box.x + box.width).toBeLessThanOrEqual(390)
    expect(box.y + box.height).toBeLessThanOrEqual(844)
    // small: under a third of the screen, the title readable
    expect(box.height).toBeLessThan(844 / 3)
    const fontPx = await page.locator('.notice-title').first().evaluate((el) => parseFloat(getComputedStyle(el).fontSize))
    expect(fontPx).toBeGreaterThanOrEqual(14)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await shot(page, 'notices-phone')

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 60_000)
})
