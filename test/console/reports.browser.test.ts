/**
 * The console's Reports page in a real browser (Debian's chromium, playwright-core) against the
 * real server in a child process. Two trucks drove the same morning: Truck 1 bus 304's recorded
 * run in Limerick on 2019-02-18 (test/fixtures/tracks), Truck 2 the same run an hour later. The
 * browser is in Paris's time zone. Alice signs in, opens Reports, runs trips for that day (a
 * custom period): the table holds the rows and totals the API gives for the same query; a summary
 * with a row per day draws the distance per day; the CSV downloads under its name; a period too
 * long is said plainly; her own time zone, set in the header, is the one the report uses; a phone
 * shows cards and stacked controls. No page error; screenshots at desktop and phone size.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Browser, type Page } from 'playwright-core'
import { chromiumPresent, launchChromium, openAccountMenu, OUTPUT, signIn, startConsoleServer, watchedPage, type ConsoleServer } from './support'
import { baseDataset, ids } from '../support/world'
import { BUS304_GPX, readGpx } from '../track/recordings'

const hasChromium = chromiumPresent('the reports browser test')

const ZONE = 'Europe/Paris'
const DAY = '2019-02-18'
const run = readGpx(BUS304_GPX)
const positions = [
  ...run.map((p) => ({ device: ids.truck1, timestamp: p.timestamp, latitude: p.latitude, longitude: p.longitude })),
  ...run.map((p) => ({ device: ids.truck2, timestamp: p.timestamp + 3600, latitude: p.latitude, longitude: p.longitude })),
]
/** the day in Paris (UTC+1 in February), `to` inclusive */
const DAY_FROM = Date.parse(`${DAY}T00:00:00+01:00`) / 1000
const DAY_TO = DAY_FROM + 86_400 - 1

let server: ConsoleServer
let base: string
let browser: Browser

beforeAll(async () => {
  if (!hasChromium) return
  server = await startConsoleServer({ name: 'reports-browser', dataset: { ...baseDataset(), positions }, signIn: [ids.alice] })
  base = server.base
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

const context = (viewport: { width: number; height: number }) =>
  watchedPage(browser, base, { viewport, timezoneId: ZONE, locale: 'en-GB', acceptDownloads: true }, { expectedConsoleErrors: /status of 400/ })

const shot = (page: Page, name: string) => page.screenshot({ path: join(OUTPUT, `${name}.png`), fullPage: true })

interface Answer {
  rows: Record<string, unknown>[]
  totals: Record<string, unknown> | null
  tz: string
}
/** the API's own answer to a path, with the page's session */
const apiAnswer = (page: Page, path: string) => page.evaluate(async (p) => (await fetch(p, { headers: { accept: 'application/json' } })).json(), path) as Promise<Answer>

/** the raw values the page drew, cell by cell (data-value: the API's value as JSON) */
const drawnValues = (page: Page, selector: string) =>
  page.locator(selector).evaluateAll((rows) => rows.map((row) => Object.fromEntries(Array.from(row.querySelectorAll('td')).map((td) => [td.dataset.key!, JSON.parse(td.dataset.value!)]))))

/** a duration as the page writes it, h:mm:ss, and read back */
const hms = (seconds: number) => `${Math.floor(seconds / 3600)}:${String(Math.floor(seconds / 60) % 60).padStart(2, '0')}:${String(seconds % 60).padStart(2, '0')}`
const readHms = (text: string) => text.split(':').map(Number).reduce((total, part) => total * 60 + part, 0)

/** runs the form as it stands and returns the report's query path */
async function runReport(page: Page): Promise<string> {
  const [request] = await Promise.all([page.waitForRequest((r) => new URL(r.url()).pathname.startsWith('/reports/')), page.getByRole('button', { name: 'Run report' }).click()])
  await page.getByRole('button', { name: 'Run report' }).waitFor()
  const url = new URL(request.url())
  return `${url.pathname}${url.search}`
}

async function customDay(page: Page, first: string, last: string) {
  await page.locator('#report-period').selectOption('custom')
  await page.locator('#report-from').fill(first)
  await page.locator('#report-to').fill(last)
}

describe.skipIf(!hasChromium)('Reports in chromium', () => {
  test('trips of a day as the API gives them, a daily summary chart, the CSV, a refusal, the own time zone', async () => {
    const { page, watch } = await context({ width: 1280, height: 800 })
    await signIn(page, base, 'alice')
    await page.getByRole('navigation').getByRole('link', { name: 'Reports' }).click()
    await page.getByRole('heading', { name: 'Reports', exact: true }).waitFor()
    expect(new URL(page.url()).hash).toBe('#/reports')
    await page.getByText(`Days and times in ${ZONE}.`).waitFor()

    // trips of both trucks on the recorded day
    await page.locator('#report-kind').selectOption('trips')
    await customDay(page, DAY, DAY)
    await page.getByRole('checkbox', { name: 'Truck 1' }).check()
    await page.getByRole('checkbox', { name: 'Truck 2' }).check()
    const path = await runReport(page)
    const query = new URL(path, base).searchParams
    expect(Number(query.get('from'))).toBe(DAY_FROM)
    expect(Number(query.get('to'))).toBe(DAY_TO)
    expect(query.get('tz')).toBe(ZONE)
    expect(query.get('devices')).toBe(`${ids.truck1},${ids.truck2}`)
    await page.locator('.report-table tbody tr').first().waitFor()

    const answer = await apiAnswer(page, path)
    expect(answer.rows.length).toBeGreaterThanOrEqual(2)
    const rows = await drawnValues(page, '.report-table tbody tr')
    expect(rows.length).toBe(answer.rows.length)
    rows.forEach((row, i) => {
      for (const key of Object.keys(row)) expect(row[key]).toEqual(answer.rows[i][key] ?? null)
    })
    const [totals] = await drawnValues(page, '.report-table tfoot tr')
    for (const key of ['duration_s', 'distance_m', 'max_speed_kmh']) expect(totals[key]).toEqual(answer.totals![key])
    // readable units: km, h:mm:ss, km/h, local times in Paris
    const first = answer.rows[0]
    const cell = (key: string) => page.locator(`.report-table tbody tr:first-child td[data-key="${key}"]`).innerText()
    expect(await cell('distance_m')).toBe(`${((first.distance_m as number) / 1000).toFixed(1)} km`)
    expect(await cell('duration_s')).toBe(hms(first.duration_s as number))
    expect(await cell('max_speed_kmh')).toBe(`${Math.round(first.max_speed_kmh as number)} km/h`)
    const startParis = new Date((first.start as number) * 1000).toLocaleTimeString('en-GB', { timeZone: ZONE, hour: '2-digit', minute: '2-digit' })
    expect(await cell('start')).toContain(startParis)
    expect(await page.locator('.report-totals td').first().innerText()).toBe('Total')
    expect(await page.locator('.report-totals td[data-key="duration_s"]').innerText()).toBe(hms(answer.totals!.duration_s as number))
    // the durations shown add up to the total shown (to the second)
    const shownSeconds = (await page.locator('.report-table tbody td[data-key="duration_s"]').allInnerTexts()).map(readHms)
    expect(shownSeconds.reduce((a, b) => a + b, 0)).toBe(readHms(await page.locator('.report-totals td[data-key="duration_s"]').innerText()))
    // the files trips have, and none they have not
    expect(await page.locator('.report-downloads a').evaluateAll((links) => links.map((a) => a.getAttribute('data-format')))).toEqual(['csv', 'xlsx'])
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280)
    await shot(page, 'reports-trips-desktop')

    // the CSV of the same query, downloaded as a file
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('.report-downloads a[data-format="csv"]').click()])
    expect(download.suggestedFilename()).toBe(`trips-${DAY}-${DAY}.csv`)
    const csv = readFileSync((await download.path())!, 'utf8')
    expect(csv.split('\r\n')[0]).toStartWith('device,alias,start,end,duration_s,distance_m,max_speed_kmh,avg_speed_kmh')
    expect(csv.split('\r\n')[1]).toStartWith(`${ids.truck1},Truck 1,`)

    // a summary with a row per day over two days: the distance per day, drawn
    await page.locator('#report-kind').selectOption('summary')
    await page.locator('#report-daily').check()
    await customDay(page, '2019-02-17', DAY)
    const summaryPath = await runReport(page)
    expect(new URL(summaryPath, base).searchParams.get('daily')).toBe('true')
    await page.locator('.distance-chart canvas').waitFor()
    const summary = await apiAnswer(page, summaryPath)
    expect(await page.locator('.report-table tbody tr').count()).toBe(summary.rows.length)
    expect(await page.locator('.report-table tbody td[data-key="day"]').evaluateAll((cells) => cells.map((c) => JSON.parse((c as HTMLElement).dataset.value!)))).toEqual(summary.rows.map((r) => r.day))
    expect(await page.locator('.report-downloads a').count()).toBe(2)
    await page.locator('.distance-chart').scrollIntoViewIfNeeded()
    await shot(page, 'reports-summary-desktop')

    // a route: speed over time, and its four files
    await page.locator('#report-kind').selectOption('route')
    await customDay(page, DAY, DAY)
    await runReport(page)
    await page.locator('.speed-over-time canvas').waitFor()
    expect(await page.locator('.report-downloads a').evaluateAll((links) => links.map((a) => a.getAttribute('data-format')))).toEqual(['csv', 'xlsx', 'gpx', 'kml'])

    // a period longer than the API allows: its refusal, said plainly
    await page.locator('#report-kind').selectOption('trips')
    await customDay(page, '2019-01-01', DAY)
    await runReport(page)
    const refusal = await page.locator('.report-error').innerText()
    expect(refusal).toStartWith('The report cannot be run as asked:')
    expect(refusal).toContain('31 days')

    // her own time zone, set in the header, is the report's
    expect(await page.locator('#own-zone-open').getAttribute('title')).toBe(`Your time zone: ${ZONE}`)
    await openAccountMenu(page)
    await page.locator('#own-zone-open').click()
    await page.locator('#own-zone').selectOption('America/New_York')
    await page.getByRole('button', { name: 'Save time zone' }).click()
    await page.getByText('Time zone saved.').waitFor()
    expect(await page.locator('#own-zone-open').getAttribute('title')).toBe('Your time zone: America/New_York')
    expect(await page.evaluate(async () => (await (await fetch('me')).json()).timezone)).toBe('America/New_York')
    await page.getByText('Days and times in America/New_York.').waitFor()
    await customDay(page, DAY, DAY)
    const newYorkPath = await runReport(page)
    const newYork = new URL(newYorkPath, base).searchParams
    expect(newYork.get('tz')).toBe('America/New_York')
    expect(Number(newYork.get('from'))).toBe(Date.parse(`${DAY}T00:00:00-05:00`) / 1000)
    await page.locator('.report-table tbody tr').first().waitFor()
    const newYorkFirst = (await apiAnswer(page, newYorkPath)).rows[0]
    const startNewYork = new Date((newYorkFirst.start as number) * 1000).toLocaleTimeString('en-GB', { timeZone: 'America/New_York', hour: '2-digit', minute: '2-digit' })
    expect(await cell('start')).toContain(startNewYork)
    // back to none of her own: the browser's
    await openAccountMenu(page)
    await page.locator('#own-zone-open').click()
    await page.locator('#own-zone').selectOption('')
    await page.getByRole('button', { name: 'Save time zone' }).click()
    await page.getByText(`Days and times in ${ZONE}.`).waitFor()
    expect(await page.evaluate(async () => (await (await fetch('me')).json()).timezone)).toBeNull()

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
  }, 30_000)

  test('on a phone: controls stacked, rows as cards, nothing wider than the screen', async () => {
    const { page, watch } = await context({ width: 390, height: 844 })
    await signIn(page, base, 'alice')
    await page.getByRole('button', { name: /^Menu/ }).click()
    await page.getByRole('navigation').getByRole('link', { name: 'Reports' }).click()
    await page.getByRole('heading', { name: 'Reports', exact: true }).waitFor()
    await page.locator('#report-kind').selectOption('trips')
    await customDay(page, DAY, DAY)
    const path = await runReport(page)
    await page.locator('.report-table tbody tr').first().waitFor()
    const answer = await apiAnswer(page, path)
    // none ticked: every device she reaches, so both trucks' trips
    expect(await page.locator('.report-table tbody tr').count()).toBe(answer.rows.length)
    expect(answer.rows.some((r) => r.device === ids.truck2)).toBe(true)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    const kind = (await page.locator('#report-kind').boundingBox())!
    const period = (await page.locator('#report-period').boundingBox())!
    expect(period.y).toBeGreaterThan(kind.y + kind.height)
    const card = (await page.locator('.report-table tbody tr').first().boundingBox())!
    expect(card.width).toBeLessThanOrEqual(390)
    expect(await page.locator('.report-table tbody tr').first().evaluate((tr) => getComputedStyle(tr).display)).toBe('grid')
    await shot(page, 'reports-form-phone')
    await page.locator('.report-table').evaluate((table) => table.scrollIntoView())
    await shot(page, 'reports-trips-phone')
    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
  }, 30_000)
})
