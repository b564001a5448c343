/**
 * A day with a gap in the console's History view, in a real browser (Debian's chromium) against
 * the real server in a child process. Truck 1 is bus 304 (Limerick, 2019-02-18, a real recording)
 * whose tracker went silent for five hours mid-run: 25 minutes of fixes cut out and the rest moved
 * five hours later, so it reappeared 3.5 km on. In the afternoon it drives back to that place.
 * The silence is no travel: the travels stop and start at it, the driving time leaves it out, the
 * map draws no line across it, the speed chart shades it as no data with no line across it, and
 * the stops list says "No data" there. Screenshots at 1280×800 and 390×844.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { type Browser, type Page } from 'playwright-core'
import { chromiumPresent, launchChromium, OUTPUT, signIn, startConsoleServer, watchedPage, type ConsoleServer } from './support'
import { baseDataset, ids } from '../support/world'
import { BUS304_GPX, haversine, readGpx } from '../track/recordings'

const hasChromium = chromiumPresent('the history gap browser test')

const ZONE = 'Europe/Paris'
const DAY = '2019-02-18'

const bus = readGpx(BUS304_GPX)
const t0 = bus[0].timestamp
const CUT_FROM = t0 + 1200
const CUT_TO = t0 + 2700
const LATER = 5 * 3600
const outbound = bus.filter((p) => p.timestamp < CUT_FROM || p.timestamp >= CUT_TO).map((p) => (p.timestamp >= CUT_TO ? { ...p, timestamp: p.timestamp + LATER } : p))
const lastBefore = outbound.filter((p) => p.timestamp < CUT_FROM).at(-1)!
const firstAfter = outbound.find((p) => p.timestamp >= CUT_TO)!
const RETURN_START = Date.parse(`${DAY}T16:00:00Z`) / 1000
// back in the afternoon from the terminus to where it reappeared (the stretch after the silence, reversed)
const inbound = bus.filter((p) => p.timestamp >= CUT_TO).map((p) => ({ ...p, timestamp: RETURN_START + (bus[bus.length - 1].timestamp - p.timestamp) })).reverse()
const points = [...outbound, ...inbound]
const positions = points.map((p) => ({ device: ids.truck1, timestamp: p.timestamp, latitude: p.latitude, longitude: p.longitude }))

let server: ConsoleServer
let base: string
let browser: Browser

beforeAll(async () => {
  if (!hasChromium) return
  server = await startConsoleServer({ name: 'history-gaps-browser', dataset: { ...baseDataset(), positions }, signIn: [ids.alice] })
  base = server.base
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

async function shot(page: Page, name: string) {
  await page.waitForTimeout(600)
  await page.waitForFunction(() => !document.querySelector('.leaflet-zoom-anim') && Array.from(document.querySelectorAll<HTMLImageElement>('img.leaflet-tile')).every((tile) => tile.complete))
  await page.screenshot({ path: join(OUTPUT, `${name}.png`) })
}
const paris = (seconds: number) => new Date(seconds * 1000).toLocaleTimeString('en-GB', { timeZone: ZONE, hour: '2-digit', minute: '2-digit' })
/** "1 h 12 min" as the view writes durations */
const duration = (s: number) => (s % 3600 >= 60 ? `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min` : `${Math.floor(s / 3600)} h`)

/** the route's lines on the map: how many separate parts each path draws (one "M" a part) */
const routeParts = (page: Page) => page.locator('.leaflet-overlay-pane path').evaluateAll((paths) => paths.map((p) => (p.getAttribute('d') ?? '').split('M').length - 1))

/**
 * What the speed chart painted in the column of a moment: the plot area is uPlot's overlay and its
 * x scale runs from the first point to the last. `line`: pixels of the line or its fill (blue);
 * `band`: pixels of the no-data shade (grey).
 */
function chartColumn(page: Page, seconds: number, first: number, last: number) {
  return page.evaluate(
    ([at, from, to]) => {
      const canvas = document.querySelector<HTMLCanvasElement>('.speed-chart canvas')!
      const over = document.querySelector('.speed-chart .u-over')!.getBoundingClientRect()
      const box = canvas.getBoundingClientRect()
      const x = Math.round(over.left - box.left + ((at - from) / (to - from)) * over.width)
      const top = Math.round(over.top - box.top)
      const data = canvas.getContext('2d')!.getImageData(x, top, 1, Math.round(over.height)).data
      let line = 0
      let band = 0
      for (let k = 0; k < data.length; k += 4) {
        // the canvas is transparent where nothing is painted: the shade is a faint grey (alpha ~0.14)
        const [r, g, b, a] = [data[k], data[k + 1], data[k + 2], data[k + 3]]
        if (a === 0) continue
        if (b > r + 25) line++
        else if (a > 20 && a < 60 && Math.abs(r - g) < 15 && Math.abs(g - b) < 15) band++
      }
      return { line, band }
    },
    [seconds, first, last],
  )
}

describe.skipIf(!hasChromium)('History of a day with a gap, in chromium', () => {
  test('no travel spans the gap, the map and the chart do not join across it, the list says No data; desktop and phone', async () => {
    const silence = firstAfter.timestamp - lastBefore.timestamp
    const away = haversine(lastBefore.latitude, lastBefore.longitude, firstAfter.latitude, firstAfter.longitude)
    expect(silence).toBeGreaterThan(5 * 3600)
    expect(away).toBeGreaterThan(3000)

    const { context, page, watch } = await watchedPage(browser, base, { viewport: { width: 1280, height: 800 }, timezoneId: ZONE, locale: 'en-GB' })
    await signIn(page, base, 'alice')
    await page.goto(`${base}/#/history/${ids.truck1}/${DAY}`)
    const rows = page.locator('table.travels tbody tr')
    await rows.first().waitFor()

    // three travels: up to the silence, from where it reappeared, and the way back; none across the silence
    expect(await rows.count()).toBe(3)
    const starts = await rows.locator('td:first-child time').allTextContents()
    const ends = await rows.locator('td:nth-child(2) time').allTextContents()
    expect(ends[0]).toBe(paris(lastBefore.timestamp))
    expect(starts[1]).toBe(paris(firstAfter.timestamp))
    expect(starts[2]).toBe(paris(RETURN_START))
    // driving: the three travels, never the five hours of silence
    const span = points[points.length - 1].timestamp - points[0].timestamp
    const travels = (await page.evaluate(
      ([device, from, to]) => fetch(`devices/${device}/history/travels?from=${from}&to=${to}`).then((res) => res.json()),
      [ids.truck1, points[0].timestamp, points[points.length - 1].timestamp] as const,
    )) as { total_duration: number }
    expect(travels.total_duration).toBeLessThan(span - silence)
    expect(await page.locator('.sum-moving').textContent()).toBe(duration(travels.total_duration))
    expect(await page.locator('.sum-gaps').textContent()).toBe(duration(silence))

    // the stops list: the silence as "No data", between the stops, with where the bus reappeared
    const gapRow = page.locator('.stops li.gap-row')
    expect(await gapRow.count()).toBe(1)
    expect(await gapRow.innerText()).toContain(`No data ${paris(lastBefore.timestamp)} – ${paris(firstAfter.timestamp)}`)
    expect(await gapRow.innerText()).toContain(`reappeared ${(away / 1000).toFixed(1)} km away`)
    expect(await page.locator('.stops li:not(.gap-row)').count()).toBe(await page.locator('[data-mark^="stop-"]').count())

    // the map: the route (and its casing) in two parts, nothing drawn across the gap
    // (fitted once the chart has taken its room under the map: Leaflet cuts a line where it leaves the view)
    await page.locator('.speed-chart canvas').waitFor()
    await page.getByRole('button', { name: 'Show the whole route' }).click()
    await page.waitForTimeout(400)
    expect(await routeParts(page)).toEqual([2, 2])

    // the chart: the silence is shaded as no data, with no line across it; the driving either side has one
    await page.locator('.speed-chart canvas').waitFor()
    await page.waitForTimeout(300)
    const [first, last] = [points[0].timestamp, points[points.length - 1].timestamp]
    const inGap = await chartColumn(page, (lastBefore.timestamp + firstAfter.timestamp) / 2, first, last)
    expect(inGap.line).toBe(0)
    expect(inGap.band).toBeGreaterThan(50)
    const driving1 = await chartColumn(page, lastBefore.timestamp - 300, first, last)
    expect(driving1.line).toBeGreaterThan(0)
    expect(driving1.band).toBe(0)
    await shot(page, 'history-gap-desktop')

    // choosing the gap: the playback goes to where the device reappeared
    await gapRow.locator('button').click()
    await page.waitForFunction(() => document.querySelector('.stops li.gap-row')?.classList.contains('selected'))
    expect(await page.locator('.playback-at').textContent()).toStartWith(`${paris(firstAfter.timestamp)}:`)
    await shot(page, 'history-gap-chosen-desktop')

    // a phone
    await page.setViewportSize({ width: 390, height: 844 })
    await page.waitForTimeout(300)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await page.getByRole('button', { name: 'Show the whole route' }).click()
    await shot(page, 'history-gap-phone')
    await page.locator('.speed-chart').scrollIntoViewIfNeeded()
    await shot(page, 'history-gap-chart-phone')
    await page.locator('#hist-stops-h').evaluate((el) => el.scrollIntoView())
    await shot(page, 'history-gap-lists-phone')

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 120_000)
})
