/**
 * The console's History view in a real browser (Debian's chromium, playwright-core) against the
 * real server in a child process. Truck 1's day is a real recording: bus 304 in Limerick on
 * 2019-02-18 (test/fixtures/tracks), out in the morning as recorded and back in the afternoon (the
 * same fixes in reverse order), parked in between. The browser is in Paris's time zone. Alice
 * signs in, opens the truck's history from its panel (the day of its newest fix), then History
 * from the navigation, picks the truck (its newest day is offered), the day: the route, the
 * stops, the travels with their addresses, the events, the speed chart, the playback by slider,
 * by play and from the tables by keyboard; a shorter minimum stop finds the bus stops; a 429
 * from the history cap is waited out; a range too long and an unknown device say so. No page
 * error; no request leaves the host but tiles. Screenshots at desktop and phone size.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { type Browser, type Page } from 'playwright-core'
import { chromiumPresent, launchChromium, OUTPUT, signIn, startConsoleServer, watchedPage, type ConsoleServer } from './support'
import { baseDataset, ids } from '../support/world'
import { BUS304_GPX, readGpx } from '../track/recordings'

const hasChromium = chromiumPresent('the history browser test')

const ZONE = 'Europe/Paris'
const DAY = '2019-02-18'

// the morning run as recorded (07:45:50 to 09:00:26 UTC); the way back from 14:00 UTC, the same fixes reversed
const outbound = readGpx(BUS304_GPX)
const firstTs = outbound[0].timestamp
const lastTs = outbound[outbound.length - 1].timestamp
const RETURN_START = Date.parse(`${DAY}T14:00:00Z`) / 1000
const inbound = outbound.map((p) => ({ ...p, timestamp: RETURN_START + (lastTs - p.timestamp) })).reverse()
const positions = [...outbound, ...inbound].map((p) => ({ device: ids.truck1, timestamp: p.timestamp, latitude: p.latitude, longitude: p.longitude }))
const overspeedAt = outbound[1000]
const events = [
  { device: ids.truck1, alarm_code: 'overspeed', timestamp: overspeedAt.timestamp, coordinates: [overspeedAt.latitude, overspeedAt.longitude], speed: 62 },
  { device: ids.truck1, alarm_code: 'ignition_off', timestamp: lastTs + 30, coordinates: [outbound[outbound.length - 1].latitude, outbound[outbound.length - 1].longitude] },
]

let server: ConsoleServer
let base: string
let browser: Browser

beforeAll(async () => {
  if (!hasChromium) return
  server = await startConsoleServer({ name: 'history-browser', dataset: { ...baseDataset(), positions, events }, signIn: [ids.alice] })
  base = server.base
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

async function newContext(viewport: { width: number; height: number }) {
  /** paths asked of this server */
  const asked: string[] = []
  const watched = await watchedPage(browser, base, { viewport, timezoneId: ZONE, locale: 'en-GB' }, {
    // the 429, the 503 and the 404 this test asks for on purpose
    expectedConsoleErrors: /status of (404|429|503)/,
    onPage: (page) => page.on('request', (request) => request.url().startsWith(base) && asked.push(new URL(request.url()).pathname)),
  })
  return { ...watched, watch: { ...watched.watch, asked } }
}

/** a screenshot once the map has stopped moving and its tiles are in */
async function shot(page: Page, name: string) {
  // Leaflet adds the tiles of a new view once its animation has ended
  await page.waitForTimeout(600)
  await page.waitForFunction(() => !document.querySelector('.leaflet-zoom-anim') && Array.from(document.querySelectorAll<HTMLImageElement>('img.leaflet-tile')).every((tile) => tile.complete))
  await page.screenshot({ path: join(OUTPUT, `${name}.png`) })
}
const playbackAt = async (page: Page) => (await page.locator('.leaflet-marker-icon:has(.hist-playback)').getAttribute('data-at')) ?? ''
const readout = (page: Page) => page.locator('.playback-at').textContent()
/** the local (Paris) time of a Unix second, as the view writes it */
const paris = (seconds: number) => new Date(seconds * 1000).toLocaleTimeString('en-GB', { timeZone: ZONE, hour: '2-digit', minute: '2-digit' })

describe.skipIf(!hasChromium)('History in chromium', () => {
  test('a day of a real recording: route, stops, travels with addresses, events, the chart, the playback; the phone layout', async () => {
    const { context, page, watch } = await newContext({ width: 1280, height: 800 })
    await signIn(page, base, 'alice')
    // from a device's panel: its history opens on the day of its newest fix
    await page.locator(`.device-row[data-device="${ids.truck1}"]`).click()
    await page.getByRole('link', { name: 'History: route, stops, travels' }).click()
    await page.locator('table.travels tbody tr').first().waitFor()
    expect(new URL(page.url()).hash).toBe(`#/history/${ids.truck1}`)
    expect(await page.locator('#history-from').inputValue()).toBe(DAY)
    expect(await page.locator('table.travels tbody tr').count()).toBe(2)

    await page.getByRole('navigation').getByRole('link', { name: 'History' }).click()
    await page.getByRole('heading', { name: 'History', exact: true }).waitFor()
    await page.getByText('Choose a device and a day').waitFor()

    // the truck, on the day picked (today): nothing then, and its newest day offered
    await page.waitForFunction(() => document.querySelectorAll('#history-device option').length === 4)
    expect(await page.locator('#history-device option').allTextContents()).toEqual(['Choose a device', 'Truck 1', 'Truck 2', 'Van 1'])
    await page.locator('#history-device').selectOption({ label: 'Truck 1' })
    await page.getByText('No positions were recorded on').waitFor()
    await page.getByText('Its newest fix is from Mon, 18 Feb 2019.').waitFor()
    await shot(page, 'history-empty-desktop')

    // the day, typed into the form and shown with the keyboard
    await page.locator('#history-from').fill(DAY)
    await page.locator('#history-to').fill(DAY)
    await page.locator('#history-to').press('Enter')
    await page.waitForFunction((day) => location.hash.endsWith(`/${day}`), DAY)
    expect(new URL(page.url()).hash).toBe(`#/history/${ids.truck1}/${DAY}`)
    await page.locator('table.travels tbody tr').first().waitFor()
    expect(await page.locator('.history-zone').textContent()).toBe('Times in Europe/Paris (CET)')

    // two travels, out and back, from and to their places (the offline geocoder's towns)
    const rows = page.locator('table.travels tbody tr')
    expect(await rows.count()).toBe(2)
    expect(await page.locator('table.travels thead th').allInnerTexts()).toEqual(['From', 'To', 'Distance', 'Duration', 'Avg\nkm/h', 'Max\nkm/h'])
    const first = await rows.nth(0).locator('td').allInnerTexts()
    expect(first[0]).toStartWith(`${paris(firstTs)}`)
    expect(first[0]).toMatch(/, IE$/)
    expect(first[1]).toMatch(/, IE$/)
    expect(first[2]).toMatch(/^1\d\.\d km$/)
    expect(first[3]).toMatch(/^1 h \d+ min$/)
    expect(Number(first[4])).toBeGreaterThan(5)
    expect(Number(first[5])).toBeGreaterThan(Number(first[4]))
    const second = await rows.nth(1).locator('td').allInnerTexts()
    expect(second[0]).toStartWith(paris(RETURN_START))

    // the stop between them: the midday wait, about five hours, numbered on the map with its duration
    expect(await page.locator('.stops li').count()).toBe(1)
    expect(await page.locator('.stops .stop-duration').textContent()).toMatch(/^[45] h( \d+ min)?$/)
    expect(await page.locator('[data-mark="stop-1"] .hist-stop-label').textContent()).toBe(await page.locator('.stops .stop-duration').textContent())
    // the summary, the events (one on the map: both carry a place), the route's line, start and end
    expect(await page.locator('.sum-distance').textContent()).toMatch(/^[23]\d\.\d km$/)
    expect(await page.locator('#hist-events-h + ul li .row-what').allTextContents()).toEqual(['Overspeed', 'Ignition off'])
    expect(await page.locator('.leaflet-marker-icon .hist-event').count()).toBe(2)
    expect(await page.locator('.leaflet-overlay-pane path').count()).toBe(2)
    expect(await page.locator('[data-mark="hist-start"]').count()).toBe(1)
    expect(await page.locator('[data-mark="hist-end"]').count()).toBe(1)

    // the chart: drawn by uPlot, fetched as its own file once History opened
    await page.locator('.speed-chart canvas').waitFor()
    expect(watch.asked.some((p) => /\/console\/assets\/uPlot[^/]*\.js$/.test(p))).toBe(true)
    const canvas = await page.locator('.speed-chart canvas').boundingBox()
    expect(canvas!.width).toBeGreaterThan(600)
    expect(canvas!.height).toBeGreaterThan(100)

    // the slider, by keyboard: each arrow is the next fix; the marker and the readout follow
    const startAt = await playbackAt(page)
    expect(await readout(page)).toStartWith(`${paris(firstTs)}:`)
    await page.locator('#history-slider').focus()
    for (let i = 0; i < 50; i++) await page.keyboard.press('ArrowRight')
    expect(await page.locator('#history-slider').inputValue()).toBe('50')
    expect(await playbackAt(page)).not.toBe(startAt)
    expect(await readout(page)).not.toStartWith(`${paris(firstTs)}:`)
    await page.keyboard.press('End')
    const endAt = await playbackAt(page)
    const [endLat, endLon] = endAt.split(',').map(Number)
    // the way back ends where the morning run began
    expect(Math.abs(endLat - outbound[0].latitude)).toBeLessThan(1e-5)
    expect(Math.abs(endLon - outbound[0].longitude)).toBeLessThan(1e-5)

    // playing moves the marker by itself
    await page.keyboard.press('Home')
    await page.getByRole('button', { name: 'Play' }).click()
    await page.waitForFunction((at) => document.querySelector('.hist-playback')?.closest('.leaflet-marker-icon')?.getAttribute('data-at') !== at, startAt)
    await page.getByRole('button', { name: 'Pause' }).click()

    // the tables by keyboard: arrows between travels, Enter shows one (drawn over the route) and moves the playback to its start
    await rows.nth(0).locator('button').focus()
    await page.keyboard.press('ArrowDown')
    expect(await page.evaluate(() => document.activeElement?.closest('tr')?.rowIndex)).toBe(2)
    await page.keyboard.press('Enter')
    await page.waitForFunction(() => document.querySelector('table.travels tbody tr:nth-child(2)')?.classList.contains('selected'))
    expect(await readout(page)).toStartWith(`${paris(RETURN_START)}:`)
    expect(await page.locator('.leaflet-overlay-pane path').count()).toBe(3)
    await shot(page, 'history-day-desktop')

    // a shorter minimum stop: the bus stops along the route, each listed and on the map
    await page.locator('#history-stop').selectOption({ label: '1 min' })
    await page.waitForFunction(() => document.querySelectorAll('.stops li').length > 2)
    const stops = await page.locator('.stops li').count()
    expect(await page.locator('[data-mark^="stop-"]').count()).toBe(stops)
    // a stop at either end of a run (the terminus) has no travel on that side
    expect(await rows.count()).toBeGreaterThanOrEqual(stops - 1)
    await page.locator('.stops li button').first().press('Enter')
    await page.waitForFunction(() => document.querySelector('.stops li')?.classList.contains('selected'))

    // a phone: one column, nothing wider than the screen
    await page.setViewportSize({ width: 390, height: 844 })
    await page.waitForTimeout(300)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    const map = await page.locator('.history-map').boundingBox()
    expect(map!.width).toBeLessThanOrEqual(390)
    expect(map!.height).toBeGreaterThan(250)
    await page.locator('#history-stop').selectOption({ label: '5 min' })
    await page.waitForFunction(() => document.querySelectorAll('.stops li').length === 1)
    await shot(page, 'history-day-phone')
    await page.locator('.speed-chart').scrollIntoViewIfNeeded()
    await shot(page, 'history-chart-phone')
    await page.locator('#hist-travels-h').evaluate((el) => el.scrollIntoView())
    await shot(page, 'history-lists-phone')

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 120_000)

  test('a 429 from the history cap and a 503 from the server\'s history memory are waited out; a range too long and an unknown device are said plainly', async () => {
    const { context, page, watch } = await newContext({ width: 1280, height: 800 })
    await signIn(page, base, 'alice')
    // the server answers the first travels request as it does when two others are in flight
    let refused = 0
    await page.route(/\/history\/travels\?/, (route) => {
      if (refused++ > 0) return route.continue()
      return route.fulfill({
        status: 429,
        headers: { 'retry-after': '1', 'content-type': 'application/problem+json' },
        body: JSON.stringify({ type: 'about:blank', title: 'Too Many Requests', status: 429, detail: 'At most 2 history requests may run at once' }),
      })
    })
    // and the first route request as it does when its history memory stayed taken
    let unavailable = 0
    await page.route(/\/history\/route\?/, (route) => {
      if (unavailable++ > 0) return route.continue()
      return route.fulfill({
        status: 503,
        headers: { 'retry-after': '1', 'content-type': 'application/problem+json' },
        body: JSON.stringify({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: "The server's history memory stayed taken" }),
      })
    })
    await page.goto(`${base}/#/history/${ids.truck1}/${DAY}`)
    await page.getByText('The server is busy with other history requests. Trying again in 1 s…').waitFor()
    await page.locator('table.travels tbody tr').first().waitFor()
    expect(refused).toBe(2)
    expect(unavailable).toBe(2)
    expect(await page.locator('.history-lists .alert').count()).toBe(0)

    // more than 31 days
    await page.locator('#history-from').fill('2019-01-01')
    await page.locator('#history-to').fill('2019-03-01')
    await page.getByRole('button', { name: 'Show', exact: true }).click()
    await page.getByText('A range may cover at most 31 days; this one covers 60.').waitFor()
    expect(new URL(page.url()).hash).toBe(`#/history/${ids.truck1}/${DAY}`)

    // a range of days: times carry their date
    await page.locator('#history-from').fill('2019-02-17')
    await page.locator('#history-to').fill('2019-02-19')
    await page.getByRole('button', { name: 'Show', exact: true }).click()
    await page.waitForFunction(() => location.hash.endsWith('/2019-02-17/2019-02-19'))
    await page.waitForFunction(() => /18 Feb/.test(document.querySelector('table.travels tbody tr td')?.textContent ?? ''))

    // a device that is not there (or not yours)
    await page.goto(`${base}/#/history/0f000000-0000-4000-8000-0000000000ff/${DAY}`)
    await page.getByText('This device does not exist, or you cannot see it.').waitFor()
    expect(await page.locator('table.travels').count()).toBe(0)

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 60_000)
})
