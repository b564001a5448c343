/**
 * Alerts in a real browser: Debian's chromium driven by playwright-core, against the real server
 * in a child process. Alice signs in; alarms sent over OsmAnd (`alarm=…`, as Traccar Client's SOS
 * button sends it) appear as notices without a reload, are read out (aria-live), counted on the
 * Events navigation item and dismissed from the keyboard; the Events page lists them with the
 * fleet's other events, follows new ones live, switches between today and the last 7 days and
 * pages through them; a place leads to the device on the map. No page error; no request leaves
 * the host but the map tiles. Screenshots at desktop (1280×800) and phone (390×844) size go to
 * test-output/.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type Browser, type Page } from 'playwright-core'
import { chromiumPresent, launchChromium, shot, signIn, startConsoleServer, watchedPage, type ConsoleServer } from './support'
import { baseDataset, ids } from '../support/world'

const hasChromium = chromiumPresent('the alerts browser test')

const IMEI = { truck1: '359710049095001', truck2: '359710049095002', van1: '359710049095003' }

// the browser runs in UTC, so "today" here is the page's today
const now = Math.floor(Date.now() / 1000)
const todayStart = now - (now % 86_400)
/** Van 1's battery ran low every hour for 55 hours before today (two pages of the last 7 days); an SOS 10 days ago (in neither range) */
const olderThisWeek = Array.from({ length: 55 }, (_, i) => ({ device: ids.van1, alarm_code: 'low_battery', coordinates: [48.1, 2.1], timestamp: todayStart - 1 - i * 3600 }))
const events = [
  { device: ids.truck2, alarm_code: 'vibration', coordinates: [45.75, 4.85], timestamp: Math.max(todayStart, now - 3600) },
  // an alarm the product does not name: the console words it by the device's own code
  { device: ids.truck1, alarm_code: 'alarm', context: { raw_alarm: '0x1f', alarm_byte: 31 }, timestamp: Math.max(todayStart, now - 1800) },
  ...olderThisWeek,
  { device: ids.truck1, alarm_code: 'sos', timestamp: now - 10 * 86_400 },
]
const positions = [{ device: ids.truck1, timestamp: now - 600, latitude: 48.85, longitude: 2.3, speed: 42, course: 80 }]

let server: ConsoleServer
let base: string
let osmandPort: number
let browser: Browser

beforeAll(async () => {
  if (!hasChromium) return
  server = await startConsoleServer({ name: 'events-browser', dataset: { ...baseDataset(), positions, events }, signIn: [ids.alice], ports: { osmand: true } })
  base = server.base
  osmandPort = server.ports.osmand
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

const newContext = (viewport: { width: number; height: number }) => watchedPage(browser, base, { viewport, timezoneId: 'UTC' })

/** today's time of day, as the browser's locale writes it */
const CLOCK_TIME = /^\d\d:\d\d:\d\d( [AP]M)?$/
const seconds = () => Math.floor(Date.now() / 1000)

/** an OsmAnd report with an alarm, as Traccar Client sends it */
async function sendAlarm(imei: string, alarm: string, timestamp: number, latitude = 48.8566, longitude = 2.3522) {
  const query = new URLSearchParams({ id: imei, lat: String(latitude), lon: String(longitude), timestamp: String(timestamp), speed: '0', alarm })
  const res = await fetch(`http://127.0.0.1:${osmandPort}/?${query}`, { method: 'POST' })
  expect(res.status).toBe(200)
}

const notices = (page: Page) => page.locator('.notice')
const noticeTitles = (page: Page) => page.locator('.notice .notice-title').allTextContents()
const rowAlarms = (page: Page) => page.locator('.events-table tbody tr .ev-alarm').allTextContents()
const rowCount = (page: Page) => page.locator('.events-table tbody tr').count()

describe.skipIf(!hasChromium)('alerts in chromium', () => {
  test('alarms arrive as notices, are counted and dismissed by keyboard; the Events page lists them live, by range and page', async () => {
    const { context, page, watch } = await newContext({ width: 1280, height: 800 })
    await signIn(page, base, 'alice')
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true))
    expect(await notices(page).count()).toBe(0)
    expect(await page.locator('.nav-badge').count()).toBe(0)

    // --- an SOS over OsmAnd: a notice with the device, the alarm in words, the time and a link; read out; counted
    const sosAt = seconds()
    await sendAlarm(IMEI.truck1, 'sos', sosAt)
    await notices(page).first().waitFor()
    const sos = notices(page).first()
    expect(await sos.locator('.notice-title').textContent()).toBe('SOS')
    expect(await sos.locator('.notice-alias').textContent()).toBe('Truck 1')
    expect(await sos.locator('time').getAttribute('datetime')).toBe(new Date(sosAt * 1000).toISOString())
    expect(await sos.locator('time').textContent()).toMatch(CLOCK_TIME)
    expect(await sos.getByRole('link', { name: 'Show on map' }).getAttribute('href')).toBe(`#/devices/${ids.truck1}`)
    expect(await sos.getAttribute('class')).toContain('urgent')
    expect(await page.locator('[aria-live="assertive"]').textContent()).toMatch(new RegExp(`^Alarm: SOS, Truck 1, ${CLOCK_TIME.source.slice(1, -1)}$`))
    // the number for the eye, the words for a screen reader, on the Events link (and the phone's Menu button)
    expect(await page.locator('.nav .nav-badge').textContent()).toBe('1 (1 new alarm)')
    expect(await page.getByRole('link', { name: 'Events (1 new alarm)' }).count()).toBe(1)

    // --- a second one stacks on top (OsmAnd's "powerCut" is power_cut)
    await sendAlarm(IMEI.truck2, 'powerCut', sosAt + 1, 45.75, 4.85)
    await page.waitForFunction(() => document.querySelectorAll('.notice').length === 2)
    expect(await noticeTitles(page)).toEqual(['Power cut', 'SOS'])
    expect(await page.locator('.notice .notice-alias').allTextContents()).toEqual(['Truck 2', 'Truck 1'])
    expect(await page.locator('.nav .nav-badge').textContent()).toBe('2 (2 new alarms)')
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true)
    await shot(page, 'alerts-notices-desktop')

    // --- the keyboard: Escape acknowledges the alarm focus is in, and focus moves to the next one; its button acknowledges the last
    await page.getByRole('button', { name: 'Acknowledge Power cut from Truck 2' }).focus()
    await page.keyboard.press('Escape')
    await page.waitForFunction(() => document.querySelectorAll('.notice').length === 1)
    await page.waitForFunction(() => document.activeElement?.classList.contains('notice-close') === true)
    await page.waitForFunction((expected) => document.activeElement?.getAttribute('aria-label') === expected, 'Acknowledge SOS from Truck 1', { timeout: 5000 })
    await page.keyboard.press('Enter')
    await page.waitForFunction(() => document.querySelectorAll('.notice').length === 0)
    await page.waitForFunction(() => document.activeElement?.id === 'content')
    // dismissing is not seeing: the count waits for the Events page
    expect(await page.locator('.nav .nav-badge').textContent()).toBe('2 (2 new alarms)')

    // --- the Events page: today's events, newest first, with device, alarm, time and place; the count is cleared
    await page.getByRole('link', { name: /^Events/ }).click()
    await page.getByRole('heading', { name: 'Events' }).waitFor()
    await page.waitForFunction(() => document.querySelectorAll('.events-table tbody tr').length === 4)
    expect(await rowAlarms(page)).toEqual(['Power cut', 'SOS', 'Alarm 0x1f', 'Vibration'])
    expect(await page.locator('.events-table tbody tr .ev-device').allTextContents()).toEqual(['Truck 2', 'Truck 1', 'Truck 1', 'Truck 2'])
    const first = page.locator('.events-table tbody tr').first()
    expect(await first.locator('.ev-place').textContent()).toBe('Lyon, FR') // the city, not raw coordinates (#20 item 9)
    expect(await first.locator('time').getAttribute('datetime')).toBe(new Date((sosAt + 1) * 1000).toISOString())
    expect(await page.locator('.events-table tbody tr').nth(2).locator('.ev-place').textContent()).toBe('No position')
    expect(await page.locator('.nav-badge').count()).toBe(0)
    expect(await page.getByRole('radio', { name: 'Today' }).isChecked()).toBe(true)
    expect(await page.locator('.pager').count()).toBe(0)

    // --- an alarm while the page is open: the list follows without a reload, and it is not counted as unseen
    await sendAlarm(IMEI.van1, 'sos', sosAt + 2, 48.1, 2.1)
    await page.waitForFunction(() => document.querySelectorAll('.events-table tbody tr').length === 5)
    expect((await rowAlarms(page))[0]).toBe('SOS')
    expect(await page.locator('.events-table tbody tr').first().locator('.ev-device').textContent()).toBe('Van 1')
    await notices(page).first().waitFor()
    expect(await page.locator('.nav-badge').count()).toBe(0)
    await shot(page, 'alerts-events-desktop')
    await page.getByRole('button', { name: 'Acknowledge SOS from Van 1' }).click()

    // --- the last 7 days, a page of 50 at a time (the SOS of 10 days ago is in neither range)
    await page.getByText('Last 7 days').click()
    await page.waitForFunction(() => document.querySelectorAll('.events-table tbody tr').length === 50)
    expect(await page.getByRole('radio', { name: 'Last 7 days' }).isChecked()).toBe(true)
    expect(await page.locator('.pager-where').textContent()).toBe('1–50')
    expect(await page.getByRole('button', { name: 'Newer' }).isDisabled()).toBe(true)
    await page.getByRole('button', { name: 'Older' }).click()
    const total = 5 + olderThisWeek.length
    await page.waitForFunction((n) => document.querySelectorAll('.events-table tbody tr').length === n, total - 50)
    expect(await page.locator('.pager-where').textContent()).toBe(`51–${total}`)
    expect(await page.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true)
    expect(new Set(await rowAlarms(page))).toEqual(new Set(['Low battery']))
    await page.getByRole('button', { name: 'Newer' }).click()
    await page.waitForFunction(() => document.querySelectorAll('.events-table tbody tr').length === 50)
    expect((await rowAlarms(page))[0]).toBe('SOS')

    // --- a place leads to its device on the map
    await page.getByRole('link', { name: 'Lyon, FR: show Truck 2 on the map' }).first().click()
    await page.waitForFunction((id) => location.hash === `#/devices/${id}`, ids.truck2)
    await page.locator('.panel-alias').waitFor()
    expect(await page.locator('.panel-alias').textContent()).toBe('Truck 2')

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 90_000)

  test('on a phone: the notices across the bottom, the count on the menu button, the events as cards', async () => {
    const { context, page, watch } = await newContext({ width: 390, height: 844 })
    await signIn(page, base, 'alice')
    // later than every alarm of the test before (same database), so that these two are the newest
    const at = seconds() + 10
    await sendAlarm(IMEI.truck1, 'harshBraking', at)
    await notices(page).first().waitFor()
    await sendAlarm(IMEI.truck2, 'sos', at + 1, 45.75, 4.85)
    await page.waitForFunction(() => document.querySelectorAll('.notice').length === 2)
    expect(await noticeTitles(page)).toEqual(['SOS', 'Harsh braking'])
    const box = await page.locator('.notices').boundingBox()
    expect(box!.x).toBeGreaterThanOrEqual(0)
    expect(box!.x + box!.width).toBeLessThanOrEqual(390)
    expect(box!.y + box!.height).toBeLessThanOrEqual(844)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    expect(await page.getByRole('button', { name: 'Menu (2 new alarms)' }).count()).toBe(1)
    await shot(page, 'alerts-notices-phone')

    await page.getByRole('button', { name: /^Menu/ }).click()
    await page.getByRole('link', { name: /^Events/ }).click()
    await page.getByRole('heading', { name: 'Events' }).waitFor()
    await page.waitForFunction(() => document.querySelectorAll('.events-table tbody tr').length >= 2)
    expect((await rowAlarms(page)).slice(0, 2)).toEqual(['SOS', 'Harsh braking'])
    const card = await page.locator('.events-table tbody tr').first().boundingBox()
    expect(card!.width).toBeLessThanOrEqual(390)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    expect(await page.locator('.nav-badge').count()).toBe(0)
    await page.getByRole('button', { name: 'Acknowledge all' }).click()
    await page.waitForFunction(() => document.querySelectorAll('.notice').length === 0)
    await shot(page, 'alerts-events-phone')

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 60_000)
})
