/**
 * Scheduled reports on the console's Reports page, in a real browser (Debian's chromium,
 * playwright-core) against the real server in a child process, with mail going to a real SMTP
 * server on 127.0.0.1 and a webhook receiver beside it. Dana (an admin) schedules a webhook report
 * and an email report through the page, sees a refused address's message beside its field, edits
 * one, disables one, sends one now and finds its run in the runs list and its mail in the mailbox,
 * deletes one. Alice (a member) on a phone is offered email only and is told why; her schedules
 * are cards no wider than the screen; a send the mail server refuses shows its error, queued. On a server without SMTP_URL the refusal of an email
 * schedule says so. Screenshots at 1280×800 and 390×844 in test-output/.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { type Browser, type Page } from 'playwright-core'
import { type Smtp, startSmtp } from '../alerts/messaging-receivers'
import { baseDataset, ids } from '../support/world'
import { chromiumPresent, launchChromium, OUTPUT, signIn, startConsoleServer, watchedPage, type ConsoleServer } from './support'

const hasChromium = chromiumPresent('the scheduled reports browser test')

const ZONE = 'Europe/Paris'

let server: ConsoleServer
let smtp: Smtp
let hook: ReturnType<typeof Bun.serve>
const posted: { filename: string | null; delivery: string | null; bytes: number }[] = []
let browser: Browser

beforeAll(async () => {
  if (!hasChromium) return
  smtp = await startSmtp()
  hook = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const body = await request.arrayBuffer()
      posted.push({ filename: /filename="([^"]+)"/.exec(request.headers.get('content-disposition') ?? '')?.[1] ?? null, delivery: request.headers.get('x-tracker-delivery'), bytes: body.byteLength })
      return new Response(null, { status: 204 })
    },
  })
  server = await startConsoleServer({
    name: 'report-schedules-browser',
    dataset: baseDataset(),
    signIn: [ids.dana, ids.alice],
    env: { SMTP_URL: smtp.url, SMTP_FROM: 'Fleet tracker <tracker@fleet.example.com>', WEBHOOK_ALLOW_PRIVATE: '1' },
  })
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
  hook?.stop(true)
  await smtp?.close()
})

const context = (base: string, viewport: { width: number; height: number }) =>
  watchedPage(browser, base, { viewport, timezoneId: ZONE, locale: 'en-GB' }, { expectedConsoleErrors: /status of 400/ })

const shot = (page: Page, name: string, fullPage = true) => page.screenshot({ path: join(OUTPUT, `${name}.png`), fullPage })

type Schedule = { id: string; name: string; kind: string; devices: string[]; groups: string[]; period: string; at: string; tz: string; format: string; to: string[]; webhook: string | null; enabled: boolean }
/** the API's own list, with the page's session */
const apiSchedules = (page: Page) => page.evaluate(async () => (await fetch('reports/schedules', { headers: { accept: 'application/json' } })).json()) as Promise<Schedule[]>

async function openReports(page: Page, phone = false) {
  if (phone) await page.getByRole('button', { name: /^Menu/ }).click()
  await page.getByRole('navigation').getByRole('link', { name: 'Reports' }).click()
  await page.getByRole('heading', { name: 'Scheduled reports' }).waitFor()
}

const dialog = (page: Page) => page.getByRole('dialog')
const row = (page: Page, name: string) => page.locator('.schedules-table tbody tr').filter({ has: page.getByRole('rowheader', { name, exact: true }) })

describe.skipIf(!hasChromium)('Scheduled reports in chromium', () => {
  test('an admin schedules to a webhook and by email, is told a refused address, edits, disables, sends now, reads the runs, deletes', async () => {
    const { page, watch } = await context(server.base, { width: 1280, height: 800 })
    await signIn(page, server.base, 'dana')
    // the account's webhook channel, made as an admin makes it
    const hookId = await page.evaluate(async (url) => {
      const response = await fetch('notifications', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Ops hook', events: ['sos'], channel: { type: 'webhook', url } }) })
      return ((await response.json()) as { id: string }).id
    }, `http://127.0.0.1:${hook.port}/reports`)
    await openReports(page)
    await page.getByText('No scheduled reports yet.').waitFor()

    // a weekly trips report of Truck 1, posted to the webhook
    await page.getByRole('button', { name: 'Schedule a report' }).click()
    await dialog(page).getByRole('heading', { name: 'Schedule a report' }).waitFor()
    expect(await page.locator('#sf-tz').inputValue()).toBe(ZONE)
    // a route may be a GPX file; trips may not: the choice follows the kind
    await page.locator('#sf-kind').selectOption('route')
    await page.locator('#sf-format').selectOption('gpx')
    await page.locator('#sf-kind').selectOption('trips')
    expect(await page.locator('#sf-format option').evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value))).toEqual(['csv', 'xlsx'])
    expect(await page.locator('#sf-format').inputValue()).toBe('csv')
    await page.locator('#sf-format').selectOption('xlsx')
    await page.locator('#sf-name').fill('Weekly trips to ops')
    await dialog(page).getByRole('checkbox', { name: 'Truck 1' }).check()
    await page.locator('#sf-period').selectOption('week')
    await page.locator('#sf-at').fill('07:30')
    await page.locator('#sf-webhook').selectOption({ label: 'Ops hook' })
    await shot(page, 'report-schedules-form-desktop', false)
    await dialog(page).getByRole('button', { name: 'Schedule', exact: true }).click()
    await page.getByText('“Weekly trips to ops” is scheduled.').waitFor()
    const weekly = row(page, 'Weekly trips to ops')
    await weekly.waitFor()
    expect(await weekly.locator('.schedule-what').innerText()).toBe('Trips\nExcel (XLSX)')
    expect(await weekly.innerText()).toContain(`Mondays at 07:30 (${ZONE})`)
    expect(await weekly.innerText()).toContain('Webhook: Ops hook')
    expect(await weekly.innerText()).toContain('Not run yet')
    let [saved] = await apiSchedules(page)
    expect(saved).toMatchObject({ name: 'Weekly trips to ops', kind: 'trips', devices: [ids.truck1], groups: [], period: 'week', at: '07:30', tz: ZONE, format: 'xlsx', to: [], webhook: hookId, enabled: true })

    // an email schedule: a refused address is said beside its field, and nothing is made
    await page.getByRole('button', { name: 'Schedule a report' }).click()
    await page.locator('#sf-name').fill('Daily events')
    await page.locator('#sf-kind').selectOption('events')
    await page.locator('#sf-period').selectOption('day')
    await page.locator('#sf-at').fill('06:00')
    await page.locator('#sf-to').fill('boss@example.com, not-an-address')
    await dialog(page).getByRole('button', { name: 'Schedule', exact: true }).click()
    await page.locator('#sf-to-error').waitFor()
    expect(await page.locator('#sf-to-error').innerText()).toContain('email addresses (name@domain)')
    expect(await page.locator('#sf-to').getAttribute('aria-invalid')).toBe('true')
    expect(await page.locator('.form-alert').innerText()).toBeTruthy()
    await shot(page, 'report-schedules-refused-desktop', false)
    expect((await apiSchedules(page)).length).toBe(1)
    await page.locator('#sf-to').fill('boss@example.com, desk@example.com')
    await expect(page.locator('#sf-to-error').count()).resolves.toBe(0)
    await dialog(page).getByRole('button', { name: 'Schedule', exact: true }).click()
    await page.getByText('“Daily events” is scheduled.').waitFor()
    await row(page, 'Daily events').locator('.schedule-to').first().waitFor()
    expect(await row(page, 'Daily events').locator('.schedule-to').allInnerTexts()).toEqual(['boss@example.com', 'desk@example.com'])

    // edit: a new name and time
    await page.getByRole('button', { name: 'Edit Daily events' }).click()
    expect(await page.locator('#sf-to').inputValue()).toBe('boss@example.com, desk@example.com')
    await page.locator('#sf-name').fill('Daily events for the desk')
    await page.locator('#sf-at').fill('06:15')
    await dialog(page).getByRole('button', { name: 'Save', exact: true }).click()
    await page.getByText('“Daily events for the desk” was saved.').waitFor()
    const daily = row(page, 'Daily events for the desk')
    expect(await daily.innerText()).toContain(`Every day at 06:15 (${ZONE})`)
    const dailySaved = (await apiSchedules(page)).find((s) => s.name === 'Daily events for the desk')!
    expect(dailySaved).toMatchObject({ kind: 'events', period: 'day', at: '06:15', format: 'xlsx', to: ['boss@example.com', 'desk@example.com'], webhook: null, enabled: true })

    // disable the webhook one
    await page.getByRole('button', { name: 'Disable Weekly trips to ops' }).click()
    await page.getByText('“Weekly trips to ops” is disabled: it sends nothing.').waitFor()
    await page.getByRole('button', { name: 'Enable Weekly trips to ops' }).waitFor()
    expect(await weekly.innerText()).toContain('Disabled')
    saved = (await apiSchedules(page)).find((s) => s.id === saved.id)!
    expect(saved.enabled).toBe(false)

    // send the email one now: the mail arrives, the run shows in the list and in its runs
    const before = smtp.mails.length
    await page.getByRole('button', { name: 'Send Daily events for the desk now' }).click()
    await page.getByText(/“Daily events for the desk” was sent \(/).waitFor()
    expect(smtp.mails.length).toBe(before + 1)
    expect(smtp.mails[before]!.to.sort()).toEqual(['boss@example.com', 'desk@example.com'])
    expect(await daily.locator('.schedule-last-run .schedule-run-status').innerText()).toBe('Sent')
    await page.getByRole('button', { name: 'Runs of Daily events for the desk' }).click()
    await dialog(page).locator('.schedule-run').first().waitFor()
    const runs = (await page.evaluate(async (id) => (await fetch(`reports/schedules/${id}/runs`)).json(), dailySaved.id)) as { status: string; attempts: number; period: { from: number; to: number }; manual: boolean }[]
    expect(runs).toHaveLength(1)
    expect(runs[0]).toMatchObject({ status: 'sent', attempts: 1, manual: true })
    expect(await dialog(page).locator('.schedule-run').count()).toBe(1)
    const shownRun = dialog(page).locator('.schedule-run').first()
    expect(await shownRun.locator('.schedule-run-status').innerText()).toBe('Sent')
    // yesterday in Paris: the period the run reported
    const yesterday = new Date(runs[0].period.from * 1000).toLocaleDateString('en-GB', { timeZone: ZONE, dateStyle: 'medium' })
    expect(await shownRun.locator('.schedule-run-period').innerText()).toBe(yesterday)
    expect(await shownRun.locator('.schedule-run-attempts').innerText()).toContain('1')
    await shot(page, 'report-schedules-runs-desktop', false)
    await dialog(page).getByRole('button', { name: 'Close' }).click()

    // the webhook one sent now, though disabled (a test of it): the file reaches the receiver
    await page.getByRole('button', { name: 'Send Weekly trips to ops now' }).click()
    await page.getByText(/“Weekly trips to ops” was sent \(/).waitFor()
    expect(posted.at(-1)?.filename).toMatch(/^trips-\d{4}-\d{2}-\d{2}-\d{4}-\d{2}-\d{2}\.xlsx$/)
    await page.locator('.report-schedules').scrollIntoViewIfNeeded()
    await shot(page, 'report-schedules-list-desktop', false)
    // nothing scrolls sideways, not even an admin's header (every view, the name and its menu)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280)
    const nameInHeader = (await page.locator('#account-toggle').boundingBox())!
    expect(nameInHeader.x + nameInHeader.width).toBeLessThanOrEqual(1280)
    const section = (await page.locator('.report-schedules').boundingBox())!
    const table = (await page.locator('.schedules-table').boundingBox())!
    expect(section.x + section.width).toBeLessThanOrEqual(1280)
    expect(table.x + table.width).toBeLessThanOrEqual(section.x + section.width)
    expect(await page.locator('.reports-page').evaluate((main) => main.scrollWidth <= main.clientWidth)).toBe(true)

    // delete, with a confirmation
    await page.getByRole('button', { name: 'Delete Weekly trips to ops' }).click()
    await dialog(page).getByText('Nothing more is sent, and its runs go with it.').waitFor()
    await dialog(page).getByRole('button', { name: 'Delete schedule' }).click()
    await page.getByText('“Weekly trips to ops” was deleted.').waitFor()
    await weekly.waitFor({ state: 'detached' })
    expect((await apiSchedules(page)).map((s) => s.name)).toEqual(['Daily events for the desk'])

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
  }, 30_000)

  test('a member on a phone: email only, said why; the schedules as cards no wider than the screen', async () => {
    const { page, watch } = await context(server.base, { width: 390, height: 844 })
    await signIn(page, server.base, 'alice')
    await openReports(page, true)
    // Dana's schedule is hers, not Alice's
    await page.getByText('No scheduled reports yet.').waitFor()
    await page.getByRole('button', { name: 'Schedule a report' }).click()
    await dialog(page).getByText('Only an administrator can choose a webhook channel: your schedules are sent by email.').waitFor()
    expect(await page.locator('#sf-webhook').count()).toBe(0)
    await page.locator('#sf-name').fill('Weekly summary')
    await page.locator('#sf-kind').selectOption('summary')
    await page.locator('#sf-period').selectOption('week')
    await page.locator('#sf-to').fill('alice@example.com')
    await dialog(page).getByRole('checkbox', { name: 'Trucks' }).check()
    const dialogBox = (await dialog(page).boundingBox())!
    expect(dialogBox.x).toBeGreaterThanOrEqual(0)
    expect(dialogBox.x + dialogBox.width).toBeLessThanOrEqual(390)
    await dialog(page).locator('.schedule-email-only').scrollIntoViewIfNeeded()
    await shot(page, 'report-schedules-form-phone', false)
    await dialog(page).getByRole('button', { name: 'Schedule', exact: true }).click()
    await page.getByText('“Weekly summary” is scheduled.').waitFor()
    const [mine] = await apiSchedules(page)
    expect(mine).toMatchObject({ name: 'Weekly summary', kind: 'summary', period: 'week', groups: [ids.trucks], devices: [], to: ['alice@example.com'], webhook: null, tz: ZONE })
    const card = row(page, 'Weekly summary')
    expect(await card.evaluate((tr) => getComputedStyle(tr).display)).toBe('block')
    const cardBox = (await card.boundingBox())!
    expect(cardBox.x + cardBox.width).toBeLessThanOrEqual(390)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    expect(await page.locator('.reports-page').evaluate((main) => main.scrollWidth <= main.clientWidth)).toBe(true)
    await card.scrollIntoViewIfNeeded()
    await shot(page, 'report-schedules-list-phone', false)

    // a send the mail server refuses: said with its error, queued for a retry, in the runs
    smtp.refusals.push([451, 'Mailbox busy, try later'])
    await page.getByRole('button', { name: 'Send Weekly summary now' }).click()
    await page.getByText(/“Weekly summary” could not be sent yet: .*Mailbox busy/).waitFor()
    expect(await card.locator('.schedule-last-run .schedule-run-status').innerText()).toBe('Queued')
    await page.getByRole('button', { name: 'Runs of Weekly summary' }).click()
    const run = dialog(page).locator('.schedule-run').first()
    await run.waitFor()
    expect(await run.locator('.schedule-run-status').innerText()).toBe('Queued')
    expect(await run.locator('.schedule-run-error').innerText()).toContain('Mailbox busy')
    const runBox = (await run.boundingBox())!
    expect(runBox.x + runBox.width).toBeLessThanOrEqual(390)
    await shot(page, 'report-schedules-runs-phone', false)
    await dialog(page).getByRole('button', { name: 'Close' }).click()
    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
  }, 30_000)

  test('without SMTP_URL, an email schedule is refused and the page says why', async () => {
    const plain = await startConsoleServer({ name: 'report-schedules-no-smtp', dataset: baseDataset(), signIn: [ids.alice] })
    try {
      const { page, watch } = await context(plain.base, { width: 1280, height: 800 })
      await signIn(page, plain.base, 'alice')
      await openReports(page)
      await page.getByRole('button', { name: 'Schedule a report' }).click()
      await page.locator('#sf-name').fill('Daily trips')
      await page.locator('#sf-to').fill('alice@example.com')
      await dialog(page).getByRole('button', { name: 'Schedule', exact: true }).click()
      await page.locator('#sf-to-error').waitFor()
      expect(await page.locator('#sf-to-error').innerText()).toContain('SMTP_URL')
      expect((await apiSchedules(page)).length).toBe(0)
      expect(watch.errors).toEqual([])
    } finally {
      await plain.stop()
    }
  }, 30_000)
})
