/**
 * The console in a real browser: Debian's chromium driven by playwright-core, against the real
 * server in a child process. Alice signs in (with the keyboard), sees her devices on the map and
 * in the list, filters them, watches a fix sent over OsmAnd move a marker without a reload, opens
 * a device's panel, uses the phone layout, and signs out. No page error; no request leaves the
 * host but the map tiles, which the test answers itself. Screenshots at desktop (1280×800) and
 * phone (390×844) size go to test-output/, for a person to look at.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type Browser, type Page } from 'playwright-core'
import { sql } from 'drizzle-orm'
import { chromiumPresent, launchChromium, openAccountMenu, PASSWORD, shot, signIn, startConsoleServer, watchedPage, type ConsoleServer } from './support'
import { baseDataset, ids } from '../support/world'

const hasChromium = chromiumPresent('the console browser test')

const TRUCK1_IMEI = '359710049095001'

const now = Math.floor(Date.now() / 1000)
/** Truck 1's last half hour, driving east from Paris; Truck 2 parked in Lyon since yesterday. */
const positions = [
  ...Array.from({ length: 12 }, (_, i) => ({ device: ids.truck1, timestamp: now - 1800 + i * 120, latitude: 48.85 + i * 0.001, longitude: 2.3 + i * 0.004, speed: 42, course: 80 })),
  { device: ids.truck2, timestamp: now - 86_400, latitude: 45.75, longitude: 4.85, speed: 0 },
]

let server: ConsoleServer
let base: string
let osmandPort: number
let browser: Browser

beforeAll(async () => {
  if (!hasChromium) return
  server = await startConsoleServer({ name: 'console-browser', dataset: { ...baseDataset(), positions }, signIn: [ids.alice, ids.bob], ports: { osmand: true } })
  base = server.base
  osmandPort = server.ports.osmand
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

// the browser notes every 401 it gets (asking who is signed in before signing in, and the wrong password tried on purpose): watchedPage passes them over
const newContext = (viewport: { width: number; height: number }) => watchedPage(browser, base, { viewport })

const aliases = (page: Page) => page.locator('.device-row .alias').allTextContents()
const marker = (page: Page, id: string) => page.locator(`.leaflet-marker-icon[data-device="${id}"]`)

async function sendOsmAnd(params: Record<string, string | number>) {
  const query = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)]))
  const res = await fetch(`http://127.0.0.1:${osmandPort}/?${query}`, { method: 'POST' })
  expect(res.status).toBe(200)
}

describe.skipIf(!hasChromium)('the console in chromium', () => {
  test('sign in, the fleet on the map and in the list, a live fix, the device panel, the phone layout, sign out', async () => {
    const { context, page, watch } = await newContext({ width: 1280, height: 800 })

    // --- sign in, with the keyboard; a wrong password first
    const response = await page.goto(`${base}/`)
    expect(response!.status()).toBe(200)
    await page.locator('#signin-name').waitFor()
    await page.waitForFunction((expected) => document.activeElement?.id === expected, 'signin-name', { timeout: 5000 })
    await shot(page, 'console-signin-desktop')
    await page.keyboard.type('alice')
    await page.keyboard.press('Tab')
    await page.keyboard.type('not the password')
    await page.keyboard.press('Enter')
    await page.getByText('Wrong name or password.').waitFor()
    await page.locator('#signin-password').fill(PASSWORD)
    await page.keyboard.press('Enter')
    await page.locator('.who').waitFor()
    expect(await page.locator('.who').textContent()).toBe('alice · Acme Logistics')

    // --- the devices: the list, the markers (Van 1 has never reported), the live stream
    await page.waitForFunction(() => document.querySelectorAll('.device-row').length === 3)
    expect(await aliases(page)).toEqual(['Truck 1', 'Truck 2', 'Van 1'])
    await marker(page, ids.truck2).waitFor()
    expect(await page.locator('.leaflet-marker-icon[data-device]').count()).toBe(2)
    await page.locator('.live-status.live').waitFor()
    const truck1Row = page.locator(`.device-row[data-device="${ids.truck1}"]`)
    await page.waitForFunction((id) => document.querySelector(`.device-row[data-device="${id}"] .age time`) !== null, ids.truck1)
    expect(await truck1Row.locator('.age').textContent()).toMatch(/^(\d+ min ago|just now)$/)
    expect(await page.locator(`.device-row[data-device="${ids.truck2}"] .age`).textContent()).toMatch(/^(\d+ h ago|1 d ago)$/)
    expect(await page.locator(`.device-row[data-device="${ids.van1}"] .age`).textContent()).toBe('No position yet')
    expect(await page.locator(`.device-row[data-device="${ids.truck2}"]`).getAttribute('data-state')).toBe('stopped')
    // Truck 1's heading, from its newest stored fix
    await page.waitForFunction((id) => document.querySelector(`.leaflet-marker-icon[data-device="${id}"] .mk`)?.getAttribute('data-course') === '80', ids.truck1)
    expect(watch.tiles).toBeGreaterThan(0)

    // --- filters: search, state, group; the map follows the list
    await page.locator('#filter-search').fill('truck 2')
    await page.waitForFunction(() => document.querySelectorAll('.device-row').length === 1)
    expect(await aliases(page)).toEqual(['Truck 2'])
    await page.waitForFunction(() => document.querySelectorAll('.leaflet-marker-icon[data-device]').length === 1)
    expect(await page.locator('.count').textContent()).toBe('1 of 3 devices')
    await page.getByRole('button', { name: 'Clear filters' }).click()
    await page.locator('#filter-state').selectOption('new')
    await page.waitForFunction(() => document.querySelectorAll('.device-row').length === 1)
    expect(await aliases(page)).toEqual(['Van 1'])
    await page.locator('#filter-state').selectOption('')
    await page.locator('#filter-group').selectOption({ label: 'Vans' })
    await page.waitForFunction(() => document.querySelectorAll('.device-row').length === 2)
    expect(await aliases(page)).toEqual(['Truck 2', 'Van 1'])
    await page.getByRole('button', { name: 'Clear filters' }).click()
    await page.waitForFunction(() => document.querySelectorAll('.device-row').length === 3)

    // --- a fix over OsmAnd moves Truck 1's marker, turns it, and updates its row: no reload
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true))
    const before = await marker(page, ids.truck1).boundingBox()
    await sendOsmAnd({ id: TRUCK1_IMEI, lat: 48.8, lon: 2.2, timestamp: Math.floor(Date.now() / 1000), speed: 27, bearing: 200 })
    await page.waitForFunction((id) => document.querySelector(`.leaflet-marker-icon[data-device="${id}"] .mk`)?.getAttribute('data-course') === '200', ids.truck1)
    const after = await marker(page, ids.truck1).boundingBox()
    expect(after!.x !== before!.x || after!.y !== before!.y).toBe(true)
    expect(await truck1Row.locator('.speed').textContent()).toBe(' · 50 km/h')
    expect(await truck1Row.locator('.age').textContent()).toBe('just now')
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true)
    // the legend says what the marks mean
    await page.locator('.legend summary').click()
    expect(await page.locator('.legend .legend-text').allTextContents()).toEqual(['Moving', 'Stopped', 'Off', 'New', 'Stolen', 'Suspended'])
    await shot(page, 'console-map-desktop')
    await page.locator('.legend summary').click()

    // --- the keyboard: arrow keys move through the list; Enter on a marker opens its device
    await truck1Row.focus()
    await page.keyboard.press('ArrowDown')
    await page.waitForFunction((id) => document.activeElement?.getAttribute('data-device') === id, ids.truck2)
    await marker(page, ids.truck2).focus()
    await page.keyboard.press('Enter')
    await page.waitForFunction((id) => location.hash === `#/devices/${id}`, ids.truck2)
    await page.locator('.panel-alias').waitFor()
    expect(await page.locator('.panel-alias').textContent()).toBe('Truck 2')
    await page.goBack()
    await truck1Row.waitFor()

    // --- the device panel: status, newest fixes, commands (sending them: commands.browser.test.ts)
    await truck1Row.click()
    await page.locator('.panel-title').waitFor()
    expect(new URL(page.url()).hash).toBe(`#/devices/${ids.truck1}`)
    expect(await page.locator('.panel-alias').textContent()).toBe('Truck 1')
    expect(await page.locator('.plate').textContent()).toBe('AB-123-CD')
    expect(await page.locator('.state-value').textContent()).toBe('Moving')
    expect(await page.locator('.panel .speed').textContent()).toBe('50 km/h')
    await page.waitForFunction(() => document.querySelectorAll('table.fixes tbody tr').length >= 10)
    expect(await page.locator('table.fixes tbody tr').count()).toBe(10)
    expect(await page.locator('table.fixes tbody tr').first().locator('td').nth(1).textContent()).toBe('50 km/h')
    const stop = page.getByRole('button', { name: 'Stop engine' })
    await stop.waitFor()
    expect(await page.getByLabel('Password', { exact: true }).getAttribute('type')).toBe('password')
    expect(await marker(page, ids.truck1).locator('.mk.selected').count()).toBe(1)
    await shot(page, 'console-panel-desktop')

    // --- a phone: the map above, the panel below; the views behind a menu
    await page.setViewportSize({ width: 390, height: 844 })
    await page.locator('.panel-title').waitFor()
    const map = await page.locator('.map').boundingBox()
    const sidebar = await page.locator('.sidebar').boundingBox()
    expect(sidebar!.y).toBeGreaterThanOrEqual(map!.y + map!.height - 1)
    expect(sidebar!.width).toBeLessThanOrEqual(390)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await shot(page, 'console-panel-phone')
    await page.getByRole('link', { name: 'Back to the list' }).click()
    await page.locator('#filter-search').waitFor()
    await shot(page, 'console-map-phone')
    expect(await page.locator('#nav').isVisible()).toBe(false)
    await page.getByRole('button', { name: 'Menu' }).click()
    await page.locator('#nav').waitFor()
    expect(await page.getByRole('navigation').getByRole('link').allTextContents()).toEqual(['Live map', 'History', 'Share links', 'Events', 'Reports'])
    await shot(page, 'console-menu-phone')

    // --- sign out: the session ends on the server too
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByText('You have signed out.').waitFor()
    await page.locator('#signin-name').waitFor()
    expect(await page.evaluate(async () => (await fetch('me')).status)).toBe(401)
    await shot(page, 'console-signin-phone')

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 90_000)

  test('leaving the map while it zooms: no error from the removed map', async () => {
    const { context, page, watch } = await newContext({ width: 1280, height: 800 })
    await signIn(page, base, 'alice')
    await marker(page, ids.truck1).waitFor()
    await page.waitForTimeout(400) // the fit on arrival has ended
    for (let i = 0; i < 3; i++) {
      // a zoom animates for 250 ms; the view closes in the middle of it
      await page.locator('.leaflet-control-zoom-in').click()
      await page.evaluate(() => (location.hash = '#/events'))
      await page.locator('.events-page').waitFor()
      await page.waitForTimeout(400)
      await page.evaluate(() => (location.hash = '#/'))
      await marker(page, ids.truck1).waitFor()
      await page.waitForTimeout(400)
    }
    expect(watch.errors).toEqual([])
    await context.close()
  }, 30_000)

  test('a session ended elsewhere brings the sign-in page back; the next person starts with their own devices and no filter', async () => {
    const { context, page, watch } = await newContext({ width: 1280, height: 800 })
    await page.goto(`${base}/`)
    await page.locator('#signin-name').fill('alice')
    await page.locator('#signin-password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForFunction(() => document.querySelectorAll('.device-row').length === 3)
    await page.locator('#filter-group').selectOption({ label: 'Trucks' })
    await page.waitForFunction(() => document.querySelectorAll('.device-row').length === 2)

    // every session of the server ends (as when the password changes): the next call is 401
    await server.database.execute(sql`DELETE FROM sessions`)
    await page.locator(`.device-row[data-device="${ids.truck2}"]`).click()
    await page.getByText('Your session has ended. Sign in again.').waitFor()

    await page.locator('#signin-name').fill('Bob')
    await page.locator('#signin-password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.locator('.who').waitFor()
    expect(await page.locator('.who').textContent()).toBe('bob · Acme Logistics')
    // where the person was going: Truck 2, which Bob reaches too
    expect(await page.locator('.panel-alias').textContent()).toBe('Truck 2')
    await page.getByRole('link', { name: 'Back to the list' }).click()
    await page.waitForFunction(() => document.querySelectorAll('.device-row').length === 2)
    expect(await aliases(page)).toEqual(['Truck 2', 'Van 1'])
    expect(await page.locator('#filter-group option').allTextContents()).toEqual(['All groups', 'Vans'])
    // a member sees no Administration
    expect(await page.getByRole('navigation').getByRole('link').allTextContents()).toEqual(['Live map', 'History', 'Share links', 'Events', 'Reports'])
    // another view, and back to the map
    await page.getByRole('link', { name: 'History' }).click()
    await page.getByRole('heading', { name: 'History', exact: true }).waitFor()
    await page.getByRole('link', { name: 'Live map' }).click()
    await page.waitForFunction(() => document.querySelectorAll('.device-row').length === 2)

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 60_000)

  test('a member changes their own password from the header: a wrong current one is said so; this session stays, the new password signs in', async () => {
    const newPassword = 'bob has a new passphrase'
    const { context, page, watch } = await watchedPage(browser, base, { viewport: { width: 1280, height: 800 } }, { expectedConsoleErrors: /status of 403/ })
    await signIn(page, base, 'bob')
    await openAccountMenu(page)
    await page.getByRole('button', { name: 'Change password' }).click()
    const dialog = page.getByRole('dialog', { name: 'Change your password' })
    await dialog.waitFor()
    await dialog.getByLabel('Current password').fill('not my password at all')
    await dialog.getByLabel('New password').fill(newPassword)
    await dialog.getByRole('button', { name: 'Change password' }).click()
    await dialog.getByText('This is not your current password.').waitFor()
    await shot(page, 'console-change-password')
    await dialog.getByLabel('Current password').fill(PASSWORD)
    await dialog.getByRole('button', { name: 'Change password' }).click()
    await page.getByRole('status').getByText('Password changed.').waitFor()
    expect(await dialog.count()).toBe(0)
    // still signed in here
    await page.getByRole('link', { name: 'History' }).click()
    await page.getByRole('heading', { name: 'History', exact: true }).waitFor()
    expect(await page.locator('.who').textContent()).toBe('bob · Acme Logistics')
    const signInWith = (password: string) => fetch(`${base}/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bob', password }) })
    expect((await signInWith(PASSWORD)).status).toBe(401)
    expect((await signInWith(newPassword)).status).toBe(200)

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 60_000)
})
