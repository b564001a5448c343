/**
 * Small things an owner notices on the console (issue 20 item 9), in a real chromium against the
 * real server in a child process: the share list's Revoke button is readable; the empty live map
 * tells an admin where to add a device and a member to ask; the Events page filters by device and
 * type and names the city; the audit log names geofences and notifications; on a phone the fitted
 * fleet is clear of the map's edges, of its buttons and of the legend. Screenshots at 1280×800 and
 * 390×844 go to test-output/.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { chromiumPresent, launchChromium, shot, signIn, startConsoleServer, watchedPage, type ConsoleServer } from './support'
import { baseDataset, ids, keys } from '../support/world'

const hasChromium = chromiumPresent('the small-things browser test')
const DESKTOP = { width: 1280, height: 800 }
const PHONE = { width: 390, height: 844 }

// a third account with no device: its admin and its member see an empty live map
const EMPTY = { account: '0b7c1d2e-3f40-4a51-8b62-000000000e01', admin: '0b7c1d2e-3f40-4a51-8b62-000000000e02', member: '0b7c1d2e-3f40-4a51-8b62-000000000e03' }
const NOW = Math.floor(Date.now() / 1000)
// the Events page shows today: an event a minute ago is today's even just after midnight
const TODAY = (ago: number) => Math.max(NOW - ago, Math.floor(new Date().setHours(0, 0, 0, 0) / 1000))

let server: ConsoleServer
let base: string
let browser: Browser

beforeAll(async () => {
  if (!hasChromium) return
  const dataset = baseDataset()
  server = await startConsoleServer({
    name: 'small-things-browser',
    dataset: {
      ...dataset,
      // the trucks far apart east–west on a narrow band: the fitted map is as wide as the fleet, the eastern name label at the edge
      devices: dataset.devices.map((d) => (d.id === ids.truck1 ? { ...d, location: [45.5, 1.0] } : d.id === ids.truck2 ? { ...d, location: [45.8, 7.0] } : d)),
      accounts: [...dataset.accounts, { id: EMPTY.account, name: 'Initech' }],
      users: [
        ...dataset.users,
        { id: EMPTY.admin, account: EMPTY.account, name: 'ivan', role: 'admin', groups: [] as string[] },
        { id: EMPTY.member, account: EMPTY.account, name: 'mia', role: 'member', groups: [] as string[] },
      ],
      events: [
        { device: ids.truck1, alarm_code: 'overspeed', coordinates: [48.8566, 2.3522], timestamp: TODAY(120) },
        { device: ids.truck2, alarm_code: 'power_cut', coordinates: [45.75, 4.85], timestamp: TODAY(60) },
        { device: ids.truck2, alarm_code: 'sos', timestamp: TODAY(30) },
      ],
    },
    signIn: [ids.dana, EMPTY.admin, EMPTY.member],
  })
  base = server.base
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
  fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${keys.dana}`, 'content-type': 'application/json' },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  })

// GET /devices answers 404 to an account with no device (the contract's "nothing to list"); the console shows the empty map for it
const open = (viewport: { width: number; height: number }) => watchedPage(browser, base, { viewport }, { expectedConsoleErrors: /status of (400|404)/ })

async function boxOf(page: Page, selector: string) {
  const box = await page.locator(selector).first().boundingBox()
  expect(box).not.toBeNull()
  return box!
}

describe.skipIf(!hasChromium)('small things in chromium', () => {
  test('the Revoke button in the share list is red text on white, not red on red', async () => {
    expect((await api('/devices/share', { method: 'POST', body: { devices: [ids.truck1], ttl: 3600 } })).status).toBe(200)
    const { context, page, watch } = await open(DESKTOP)
    await signIn(page, base, 'dana')
    await page.goto(`${base}/#/share`)
    const revoke = page.locator('.share-link').first().getByRole('button', { name: 'Revoke' })
    await revoke.waitFor()
    const colours = await revoke.evaluate((button) => {
      const style = getComputedStyle(button)
      return { text: style.color, background: style.backgroundColor }
    })
    expect(colours.text).not.toBe(colours.background)
    expect(colours.background).toMatch(/^rgb\(255, 255, 255\)$|^rgba\(0, 0, 0, 0\)$/)
    await shot(page, 'small-share-revoke-desktop')
    await page.setViewportSize(PHONE)
    await shot(page, 'small-share-revoke-phone')
    expect(watch.errors).toEqual([])
    await context.close()
  }, 60_000)

  test('the empty live map: an admin is pointed to Administration › Devices, a member to an administrator', async () => {
    const { context, page, watch } = await open(DESKTOP)
    await signIn(page, base, 'ivan')
    const empty = page.locator('.sidebar .empty')
    await empty.waitFor()
    expect(await empty.textContent()).not.toContain('An administrator can')
    const link = empty.getByRole('link', { name: 'Administration › Devices' })
    await shot(page, 'small-empty-map-admin-desktop')
    await page.setViewportSize(PHONE)
    await shot(page, 'small-empty-map-admin-phone')
    await link.click()
    await page.getByRole('heading', { name: 'Devices', level: 2 }).waitFor()
    expect(watch.errors).toEqual([])
    await context.close()

    const member = await open(PHONE)
    await signIn(member.page, base, 'mia')
    const note = member.page.locator('.sidebar .empty')
    await note.waitFor()
    expect(await note.textContent()).toContain('An administrator can add devices')
    expect(await note.getByRole('link').count()).toBe(0)
    expect(member.watch.errors).toEqual([])
    await member.context.close()
  }, 60_000)

  test('the Events page filters by device and by type, and names the city', async () => {
    const { context, page, watch } = await open(DESKTOP)
    await signIn(page, base, 'dana')
    await page.goto(`${base}/#/events`)
    const rows = page.locator('.events-table tbody tr')
    await page.waitForFunction(() => document.querySelectorAll('.events-table tbody tr').length === 3)
    expect(await page.locator('.events-table .ev-place').allTextContents()).toEqual(['No position', 'Lyon, FR', 'Paris, FR'])
    await shot(page, 'small-events-desktop')

    await page.locator('#events-device').selectOption({ label: 'Truck 2' })
    await page.waitForFunction(() => document.querySelectorAll('.events-table tbody tr').length === 2)
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-alarm')))).toEqual(['sos', 'power_cut'])
    await page.locator('#events-type').selectOption('power_cut')
    await page.waitForFunction(() => document.querySelectorAll('.events-table tbody tr').length === 1)
    expect(await rows.first().getAttribute('data-alarm')).toBe('power_cut')
    await page.locator('#events-device').selectOption('')
    await page.locator('#events-type').selectOption('tamper')
    await page.locator('.events-page .empty').filter({ hasText: 'No event of this device or type' }).waitFor()
    await page.locator('#events-type').selectOption('')
    await page.setViewportSize(PHONE)
    await page.waitForFunction(() => document.querySelectorAll('.events-table tbody tr').length === 3)
    await shot(page, 'small-events-phone')
    expect(watch.errors).toEqual([])
    await context.close()
  }, 60_000)

  test('the audit log names geofences and notifications by their names', async () => {
    const geofence = await api('/geofences', { method: 'POST', body: { name: 'Depot Lyon', area: { type: 'Circle', center: [45.75, 4.85], radius: 500 } } })
    expect(geofence.status, await geofence.clone().text()).toBeLessThan(300)
    const notification = await api('/notifications', { method: 'POST', body: { name: 'Night desk', events: ['sos'], channel: { type: 'webhook', url: 'https://hooks.example.com/fleet', secret: 'a long enough webhook secret 0123456789' } } })
    expect(notification.status, await notification.clone().text()).toBeLessThan(300)
    const { context, page, watch } = await open(DESKTOP)
    await signIn(page, base, 'dana')
    await page.goto(`${base}/#/admin/audit`)
    await page.locator('.audit-table tbody tr').first().waitFor()
    await page.waitForFunction(() => /Night desk/.test(document.querySelector('.audit-table tbody')?.textContent ?? ''))
    const whats = await page.locator('.audit-table .audit-what').allTextContents()
    expect(whats).toContain('Created notification Night desk')
    expect(whats).toContain('Created geofence Depot Lyon')
    await shot(page, 'small-audit-desktop')
    expect(watch.errors).toEqual([])
    await context.close()
  }, 60_000)

  test('on a phone the fitted fleet is clear of the map edges and of the legend', async () => {
    const { context, page, watch } = await open(PHONE)
    await signIn(page, base, 'dana')
    await page.locator('.mk-icon').nth(1).waitFor()
    await page.waitForTimeout(400) // the fit's animation
    const map = await boxOf(page, '.map')
    const legend = await boxOf(page, '.legend')
    const tools = await boxOf(page, '.map-tools')
    // each marker's dot and, when shown, its name label
    const markers = await page
      .locator('.mk-icon .mk-dot, .mk-icon .mk-label')
      .evaluateAll((els) => els.filter((e) => getComputedStyle(e).display !== 'none').map((e) => ({ name: e.className, ...e.getBoundingClientRect().toJSON() })))
    expect(markers.filter((m) => m.name === 'mk-dot').length).toBe(2)
    for (const m of markers) {
      // inside the map: not cut at its edge
      expect(m.left).toBeGreaterThanOrEqual(map.x)
      expect(m.top).toBeGreaterThanOrEqual(map.y)
      expect(m.right).toBeLessThanOrEqual(map.x + map.width)
      expect(m.bottom).toBeLessThanOrEqual(map.y + map.height)
      // not under the map's buttons
      expect(m.right > tools.x && m.left < tools.x + tools.width && m.bottom > tools.y && m.top < tools.y + tools.height).toBe(false)
      // not under the legend
      const overlaps = m.right > legend.x && m.left < legend.x + legend.width && m.bottom > legend.y && m.top < legend.y + legend.height
      expect(overlaps).toBe(false)
    }
    await shot(page, 'small-map-phone')
    await page.setViewportSize(DESKTOP)
    await shot(page, 'small-map-desktop')
    expect(watch.errors).toEqual([])
    await context.close()
  }, 60_000)
})
