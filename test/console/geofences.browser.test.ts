/**
 * Geofences in a real browser: Debian's chromium against the real server in a child process.
 * Dana (an admin) draws a circle and a polygon in Administration › Geofences by clicking the map;
 * the server's refusals (a radius out of range, a self-intersecting polygon) show beside their
 * field and nothing is saved. The live map draws the account's geofences (one across the
 * antimeridian, drawn narrow) with their names and speed limit, and hides them on request for the
 * rest of the session. OsmAnd fixes then move a truck into and out of the circle, and over its
 * speed limit: "Entered Yard", "Overspeed … (limit 50)" and "Left Yard" arrive as notices without
 * a reload and are on the Events page. On a phone: an edit that keeps the shape, a polygon placed
 * from the keyboard, a delete after its confirmation. Screenshots at 1280×800 and 390×844; no page
 * error, no request leaving the host.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { baseDataset, ids, keys } from '../support/world'
import { chromiumPresent, type ConsoleServer, launchChromium, shot, signIn, startConsoleServer, watchedPage } from './support'

const hasChromium = chromiumPresent('the geofences browser test')
const TRUCK1_IMEI = '359710049095001'

let server: ConsoleServer
let browser: Browser

beforeAll(async () => {
  if (!hasChromium) return
  server = await startConsoleServer({ name: 'geofences-browser', dataset: baseDataset(), signIn: [ids.dana], ports: { osmand: true } })
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

interface StoredGeofence {
  id: string
  name: string
  area: { type: 'Circle'; center: [number, number]; radius: number } | { type: 'Polygon'; coordinates: number[][][] }
  groups: string[]
  speed_limit: number | null
}

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${server.base}/${path}`, {
    method,
    headers: { authorization: `Bearer ${keys.dana}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  expect(response.status).toBeLessThan(300)
  return (await response.json()) as T
}

/** an OsmAnd report as Traccar Client sends it (speed in knots) */
async function report(latitude: number, longitude: number, timestamp: number, speedKmh = 0) {
  const query = new URLSearchParams({ id: TRUCK1_IMEI, lat: String(latitude), lon: String(longitude), timestamp: String(timestamp), speed: String(speedKmh / 1.852) })
  const response = await fetch(`http://127.0.0.1:${server.ports.osmand}/?${query}`, { method: 'POST' })
  expect(response.status).toBe(200)
}

/** waits for the drawing's count of corners to say `text` */
const corners = (page: Page, text: string) => page.locator('.gf-count').filter({ hasText: new RegExp(`^${text}$`) }).waitFor()

/** clicks the drawing map `dx`, `dy` pixels from its middle */
async function clickMap(page: Page, dx: number, dy: number) {
  await page.locator('.gf-map').scrollIntoViewIfNeeded()
  const box = (await page.locator('.gf-map').boundingBox())!
  await page.mouse.click(box.x + box.width / 2 + dx, box.y + box.height / 2 + dy)
}

const dialog = (page: Page) => page.locator('dialog[open]')
const notice = (page: Page, title: string) => page.locator('.notice .notice-title', { hasText: new RegExp(`^${title.replace(/[()]/g, '\\$&')}$`) })

describe.skipIf(!hasChromium)('geofences in chromium', () => {
  test('drawn in Administration, refused beside the field, drawn on the live map; crossing one is told live and on the Events page', async () => {
    const { context, page, watch } = await watchedPage(browser, server.base, { viewport: { width: 1280, height: 800 }, timezoneId: 'UTC' }, { expectedConsoleErrors: /status of 400/ })
    await signIn(page, server.base, 'dana')
    await page.goto(`${server.base}/#/admin/geofences`)
    await page.getByRole('heading', { name: 'Geofences', level: 2 }).waitFor()
    expect(await page.locator('.empty-note').textContent()).toContain('No geofence yet')

    // --- a circle: a click places the centre; a radius out of range is the server's 400, beside the radius
    await page.getByRole('button', { name: 'Add geofence' }).click()
    await dialog(page).waitFor()
    await page.getByLabel('Name').fill('Yard')
    await page.getByLabel('Speed limit (km/h)').fill('50')
    for (let i = 0; i < 3; i++) await page.locator('.gf-map .leaflet-control-zoom-in').click()
    await clickMap(page, -250, -40)
    await page.locator('.gf-centre').waitFor()
    // a first centre comes with a radius that shows at this zoom
    expect(Number(await page.getByLabel('Radius (m)').inputValue())).toBeGreaterThan(1000)
    await page.getByLabel('Radius (m)').fill('5')
    await page.getByRole('button', { name: 'Add geofence' }).last().click()
    await page.locator('#gf-radius-error').waitFor()
    expect(await page.locator('#gf-radius-error').textContent()).toContain('10 to 100,000')
    expect(await page.getByLabel('Radius (m)').getAttribute('aria-invalid')).toBe('true')
    expect(await api<StoredGeofence[]>('GET', 'geofences')).toEqual([])
    await page.getByLabel('Radius (m)').fill('400')
    await page.locator('#gf-radius-error').waitFor({ state: 'detached' })
    // once the typing pauses, the map shows the whole circle, more than a dot
    await page.waitForFunction(() => {
      const circle = document.querySelector('.gf-map .leaflet-overlay-pane path')?.getBoundingClientRect()
      return circle !== undefined && circle.width > 40 && circle.width < 340
    })
    await shot(page, 'geofences-draw-circle-desktop')
    await page.getByRole('button', { name: 'Add geofence' }).last().click()
    await dialog(page).waitFor({ state: 'detached' })
    expect(await page.locator('.admin-notice').textContent()).toBe('Yard was added.')
    const yardRow = page.locator('.geofences-table tbody tr', { hasText: 'Yard' })
    await yardRow.waitFor()
    expect(await yardRow.locator('td').allTextContents()).toEqual(['Circle, 400 m radius', 'Every device', '50 km/h', 'EditDelete'])

    // --- a polygon crossing itself (a bow tie) is refused under the map, corners named as drawn; nothing is saved
    await page.getByRole('button', { name: 'Add geofence' }).first().click()
    await dialog(page).waitFor()
    await page.getByLabel('Name').fill('Depot')
    await page.getByLabel('Polygon').check()
    for (let i = 0; i < 3; i++) await page.locator('.gf-map .leaflet-control-zoom-in').click()
    for (const [dx, dy] of [[-120, -80], [120, 80], [120, -80], [-120, 80]]) await clickMap(page, dx!, dy!)
    await corners(page, '4 corners')
    await page.getByRole('button', { name: 'Finish shape' }).click()
    await corners(page, '4 corners, closed')
    await page.getByRole('button', { name: 'Add geofence' }).last().click()
    await page.locator('#gf-area-error').waitFor()
    expect(await page.locator('#gf-area-error').textContent()).toMatch(/^This shape is self-intersecting: the edge from corner \d to corner \d meets the edge from corner \d to corner \d$/)
    expect((await api<StoredGeofence[]>('GET', 'geofences')).map((g) => g.name)).toEqual(['Yard'])
    await shot(page, 'geofences-draw-refused-desktop')

    // --- drawn again: corners clicked, one undone, the shape closed by clicking its first corner; for the Trucks group
    await page.getByRole('button', { name: 'Start over' }).click()
    await page.locator('#gf-area-error').waitFor({ state: 'detached' })
    for (const [dx, dy] of [[-120, -80], [120, -80], [40, 140]]) await clickMap(page, dx!, dy!)
    await corners(page, '3 corners')
    await page.getByRole('button', { name: 'Undo last corner' }).click()
    await corners(page, '2 corners')
    await clickMap(page, 120, 80)
    await clickMap(page, -120, 80)
    await corners(page, '4 corners')
    await page.locator('.gf-closer').click()
    await corners(page, '4 corners, closed')
    await page.getByRole('checkbox', { name: 'Trucks' }).check()
    await shot(page, 'geofences-draw-polygon-desktop')
    await page.getByRole('button', { name: 'Add geofence' }).last().click()
    await dialog(page).waitFor({ state: 'detached' })
    expect(await page.locator('.admin-notice').textContent()).toBe('Depot was added.')
    await page.locator('.geofences-table tbody tr', { hasText: 'Depot' }).waitFor()
    expect(await page.locator('.geofences-table tbody tr', { hasText: 'Depot' }).locator('td').allTextContents()).toEqual([
      'Polygon, 4 corners',
      'Trucks',
      'None',
      'EditDelete',
    ])
    await shot(page, 'geofences-admin-desktop')

    const stored = await api<StoredGeofence[]>('GET', 'geofences')
    const yard = stored.find((g) => g.name === 'Yard')!
    const depot = stored.find((g) => g.name === 'Depot')!
    expect(yard.area).toMatchObject({ type: 'Circle', radius: 400 })
    expect(depot).toMatchObject({ groups: [ids.trucks], speed_limit: null })
    expect(depot.area.type === 'Polygon' && depot.area.coordinates[0]!.length).toBe(5)
    // one across the antimeridian (Fiji), through the API
    const dateLine = await api<StoredGeofence>('POST', 'geofences', {
      name: 'Date line',
      area: { type: 'Polygon', coordinates: [[[175, -20], [-175, -20], [-175, -10], [175, -10], [175, -20]]] },
    })

    // --- the live map draws all three under the markers, names and the speed limit beside them
    await page.goto(`${server.base}/#/`)
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true))
    const areas = page.locator('.leaflet-geofences-pane path[data-geofence]')
    await page.waitForFunction(() => document.querySelectorAll('.leaflet-geofences-pane path[data-geofence]').length >= 3)
    expect(await page.locator(`path[data-geofence="${yard.id}"]`).count()).toBe(1)
    expect(await page.locator(`path[data-geofence="${depot.id}"]`).count()).toBe(1)
    // the polygon across ±180° is drawn on both sides, each copy narrow (not stretched across the world)
    expect(await page.locator(`path[data-geofence="${dateLine.id}"]`).count()).toBe(2)
    // zoomed out to the whole world (each step waits for the zoom before the next)
    // (forced: the button turns disabled at the last step, and Playwright would wait for it to be enabled)
    for (let i = 0; i < 20 && (await page.locator('.map .leaflet-control-zoom-out.leaflet-disabled').count()) === 0; i++) {
      await page.locator('.map .leaflet-control-zoom-out').click({ force: true })
      await page.waitForTimeout(150)
    }
    await page.waitForTimeout(300)
    // 10° of longitude are 7 px wide at zoom 0; drawn the long way round they would be 350°, some 250 px
    const widths = await page.locator(`path[data-geofence="${dateLine.id}"]`).evaluateAll((paths) => paths.map((p) => (p as SVGGraphicsElement).getBBox().width))
    expect(Math.min(...widths)).toBeGreaterThan(3)
    expect(Math.max(...widths)).toBeLessThan(30)
    await page.getByRole('button', { name: 'Show all devices' }).click()
    await page.waitForTimeout(400)
    const yardLabel = page.locator(`.gf-label-icon[data-geofence="${yard.id}"] .gf-label`)
    expect(await yardLabel.locator('.gf-name').textContent()).toBe('Yard')
    expect(await yardLabel.locator('.gf-limit').textContent()).toBe('50')
    expect(await yardLabel.textContent()).toContain('speed limit 50 km/h')
    expect(await page.locator(`.gf-label-icon[data-geofence="${depot.id}"] .gf-limit`).count()).toBe(0)
    await page.locator('.legend summary').click()
    expect(await page.locator('.legend').textContent()).toContain('Its speed limit, km/h')
    await shot(page, 'geofences-live-desktop')
    await page.locator('.legend summary').click()

    // --- hidden from the keyboard, and still hidden after a reload (the session's choice); shown again
    const toggle = page.getByRole('checkbox', { name: 'Geofences' })
    expect(await toggle.isChecked()).toBe(true)
    await toggle.focus()
    await page.keyboard.press('Space')
    await areas.first().waitFor({ state: 'detached' })
    await page.reload()
    await page.locator('.live-status.live').waitFor()
    await page.getByRole('checkbox', { name: 'Geofences' }).waitFor()
    expect(await page.getByRole('checkbox', { name: 'Geofences' }).isChecked()).toBe(false)
    expect(await areas.count()).toBe(0)
    await page.getByRole('checkbox', { name: 'Geofences' }).check()
    await page.waitForFunction(() => document.querySelectorAll('.leaflet-geofences-pane path[data-geofence]').length >= 3)
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true))

    // --- Truck 1 drives into the Yard, over its limit, and out: notices without a reload
    const [lat, lon] = yard.area.type === 'Circle' ? yard.area.center : [0, 0]
    const t0 = Math.floor(Date.now() / 1000) - 60
    await report(lat + 0.02, lon, t0) // 2 km north: outside
    await report(lat, lon, t0 + 10, 20)
    await notice(page, 'Entered Yard').waitFor()
    await report(lat + 0.001, lon, t0 + 20, 80)
    await notice(page, 'Overspeed 80 km/h (limit 50)').waitFor()
    await report(lat + 0.02, lon, t0 + 30, 30)
    await notice(page, 'Left Yard').waitFor()
    expect(await page.locator('.notice', { hasText: 'Left Yard' }).locator('.notice-alias').textContent()).toBe('Truck 1')
    expect(await page.locator('[aria-live="assertive"]').textContent()).toStartWith('Left Yard, Truck 1, ')
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true)
    await shot(page, 'geofences-notices-desktop')

    // --- and on the Events page, worded the same
    await page.getByRole('link', { name: /^Events/ }).first().click()
    await page.locator('.events-table').waitFor()
    const rows = await page.locator('.events-table tbody tr[data-device] .ev-alarm').allTextContents()
    expect(rows.filter((r) => /Yard|Overspeed/.test(r))).toEqual(['Left Yard', 'Overspeed 80 km/h (limit 50)', 'Entered Yard'])

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 60_000)

  test('on a phone: the live map with geofences, the list as cards, the dialog full screen; edit, keyboard drawing, delete', async () => {
    const { context, page, watch } = await watchedPage(browser, server.base, { viewport: { width: 390, height: 844 }, timezoneId: 'UTC' })
    await signIn(page, server.base, 'dana')
    await page.waitForFunction(() => document.querySelectorAll('.leaflet-geofences-pane path[data-geofence]').length >= 3)
    await page.getByRole('checkbox', { name: 'Geofences' }).waitFor()
    await shot(page, 'geofences-live-phone')

    await page.goto(`${server.base}/#/admin/geofences`)
    await page.locator('.geofences-table tbody tr').first().waitFor()
    await shot(page, 'geofences-admin-phone')
    await page.getByRole('button', { name: 'Edit Depot' }).click()
    await dialog(page).waitFor()
    await page.locator('.gf-corner').first().waitFor()
    await page.locator('.gf-map .leaflet-tile-loaded').first().waitFor()
    await page.waitForTimeout(300) // the tiles fade in
    expect(await page.locator('.gf-corner').count()).toBe(4)
    await corners(page, '4 corners, closed')
    await shot(page, 'geofences-draw-phone')
    // no side-scrolling in the dialog
    expect(await dialog(page).evaluate((d) => d.scrollWidth <= d.clientWidth)).toBe(true)
    // an edit that leaves the shape alone sends none (the stored area stays as it was)
    const depotBefore = (await api<StoredGeofence[]>('GET', 'geofences')).find((g) => g.name === 'Depot')!
    await page.getByLabel('Speed limit (km/h)').fill('30')
    await page.getByRole('button', { name: 'Save changes' }).click()
    await dialog(page).waitFor({ state: 'detached' })
    expect(await page.locator('.admin-notice').textContent()).toBe('Depot was saved.')
    await page.locator('.geofences-table tbody tr', { hasText: 'Depot' }).getByText('30 km/h').waitFor()
    const depot = (await api<StoredGeofence[]>('GET', 'geofences')).find((g) => g.name === 'Depot')!
    expect(depot).toMatchObject({ speed_limit: 30, groups: [ids.trucks] })
    expect(depot.area).toEqual(depotBefore.area)

    // a polygon placed from the keyboard: the arrow keys move the map, the buttons place at its cross
    await page.getByRole('button', { name: 'Add geofence' }).click()
    await dialog(page).waitFor()
    await page.getByLabel('Name').fill('Gate')
    await page.getByLabel('Polygon').check()
    for (const key of ['ArrowUp', 'ArrowLeft', 'ArrowDown']) {
      await page.getByRole('button', { name: 'Add corner at the cross' }).click()
      await page.locator('.gf-map').focus()
      await page.keyboard.press(key)
      await page.keyboard.press(key)
      await page.waitForTimeout(300) // the pan
    }
    await corners(page, '3 corners')
    await page.getByRole('button', { name: 'Finish shape' }).click()
    await page.getByRole('button', { name: 'Add geofence' }).last().click()
    await dialog(page).waitFor({ state: 'detached' })
    await page.locator('.geofences-table tbody tr', { hasText: 'Gate' }).getByText('Polygon, 3 corners').waitFor()

    // deleted after a confirmation
    await page.getByRole('button', { name: 'Delete Date line' }).click()
    await dialog(page).getByRole('button', { name: 'Delete geofence' }).click()
    await dialog(page).waitFor({ state: 'detached' })
    expect(await page.locator('.admin-notice').textContent()).toBe('Date line was deleted.')
    await page.locator('.geofences-table tbody tr', { hasText: 'Date line' }).waitFor({ state: 'detached' })
    expect((await api<StoredGeofence[]>('GET', 'geofences')).map((g) => g.name)).toEqual(['Depot', 'Gate', 'Yard'])

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 30_000)
})
