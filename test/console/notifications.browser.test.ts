/**
 * Administration › Notifications in a real browser (Debian's chromium, playwright-core) against
 * the real server in a child process (WEBHOOK_ALLOW_PRIVATE=1, an OsmAnd port) and a webhook
 * receiver on 127.0.0.1 in this test. Dana, Acme's admin, is told a secret under 16 bytes is too
 * short before anything is sent, is refused an ftp:// URL beside the field (nothing saved), creates
 * a notification for SOS with a secret (never shown again), sends a test
 * (the receiver gets it signed; the page says it was delivered), sees an OsmAnd SOS delivered in
 * the delivery log, then a receiver answering 500: a failed test in words, a pending delivery with
 * its status code; on a phone, the list and the log as cards, an edit and a delete with its
 * confirmation. No page error; no request leaves the host but tiles. Screenshots at 1280×800 and
 * 390×844 go to test-output/.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Locator, Page } from 'playwright-core'
import { startReceiver, verifySignature, type Receiver } from '../alerts/delivery-receiver'
import { baseDataset, ids } from '../support/world'
import { chromiumPresent, type ConsoleServer, launchChromium, shot, signIn, startConsoleServer, watchedPage } from './support'

const hasChromium = chromiumPresent('the notifications browser test')

const TRUCK1_IMEI = '359710049095001'
const SECRET = 'whsec-browser-test-9f3a7c1e5b'
const NAME = 'SOS to dispatch'
const DESKTOP = { width: 1280, height: 800 }
const PHONE = { width: 390, height: 844 }

let server: ConsoleServer
let receiver: Receiver
let browser: Browser
/** what the receiver answers: 204 until a test says otherwise */
let answerStatus = 204

beforeAll(async () => {
  if (!hasChromium) return
  receiver = startReceiver(() => new Response(null, { status: answerStatus }))
  server = await startConsoleServer({
    name: 'notifications-browser',
    dataset: baseDataset(),
    signIn: [ids.dana],
    ports: { osmand: true },
    env: { WEBHOOK_ALLOW_PRIVATE: '1' },
  })
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
  receiver?.stop()
})

/** alarms go a second apart: a device's second holds one event (a re-sent alarm is stored once) */
let alarmAt = Math.floor(Date.now() / 1000) - 30

/** an OsmAnd report with an alarm, as Traccar Client's SOS button sends it */
async function sendAlarm(alarm: string) {
  const query = new URLSearchParams({ id: TRUCK1_IMEI, lat: '48.8566', lon: '2.3522', timestamp: String(++alarmAt), speed: '0', alarm })
  const res = await fetch(`http://127.0.0.1:${server.ports.osmand}/?${query}`, { method: 'POST' })
  expect(res.status).toBe(200)
}

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(50)
  }
}

/** the delivery log's rows (cards on a phone) after a Refresh, until one matches */
async function logRow(dialog: Locator, selector: string): Promise<Locator> {
  const row = dialog.locator(`.delivery-table tbody tr${selector}`)
  await until(async () => {
    if ((await row.count()) > 0) return true
    await dialog.getByRole('button', { name: 'Refresh' }).click()
    await Bun.sleep(150)
    return false
  }, `a delivery ${selector}`)
  return row.first()
}

const notificationRow = (page: Page, name: string) => page.locator('.notifications-table tbody tr').filter({ has: page.getByRole('rowheader', { name }) })
/** the page's HTML and every field's current value (typed values are not in the HTML) */
const html = async (page: Page) =>
  (await page.content()) + (await page.locator('input, textarea').evaluateAll((fields) => fields.map((f) => (f as HTMLInputElement).value).join('\n')))

describe.skipIf(!hasChromium)('notifications in chromium', () => {
  test('an admin creates a notification (a refused URL beside its field), tests it, and reads its deliveries: delivered, then pending on a 500', async () => {
    const { context, page, watch } = await watchedPage(browser, server.base, { viewport: DESKTOP }, { expectedConsoleErrors: /status of 400/ })
    await signIn(page, server.base, 'dana')
    await page.goto(`${server.base}/#/admin/notifications`)
    await page.getByRole('heading', { name: 'Notifications', level: 2 }).waitFor()
    await page.getByText('No notification yet.').waitFor()

    // --- an ftp:// URL: the API's 400 beside the URL, nothing saved
    await page.getByRole('button', { name: 'Add a notification' }).click()
    const dialog = page.getByRole('dialog', { name: 'Add a notification' })
    await dialog.waitFor()
    await page.waitForFunction(() => document.activeElement?.id === 'nf-name', undefined, { timeout: 5000 })
    await page.keyboard.type(NAME)
    await dialog.locator('.nf-codes input[value="sos"]').check()
    expect(await dialog.getByText('SOS', { exact: true }).count()).toBe(1)
    await page.locator('#nf-url').fill('ftp://files.example.com/in')
    // --- a secret under 16 bytes: told beside it before anything is sent
    expect(await page.locator('#nf-secret-hint').textContent()).toContain('At least 16 characters')
    await page.locator('#nf-secret').fill('short')
    await dialog.getByRole('button', { name: 'Add a notification' }).click()
    await page.locator('#nf-secret-error').getByText('Too short: at least 16 characters').waitFor()
    expect(await page.locator('#nf-url-error').count()).toBe(0)
    await page.locator('#nf-secret').fill(SECRET)
    await dialog.getByRole('button', { name: 'Add a notification' }).click()
    await page.locator('#nf-url-error').getByText('Must be http:// or https://, not ftp://').waitFor()
    expect(await page.locator('#nf-url').getAttribute('aria-invalid')).toBe('true')
    expect(await page.locator('#nf-name-error').count()).toBe(0)
    await shot(page, 'notifications-refused-url-desktop')
    const none = await page.evaluate(() => fetch('notifications').then((r) => r.json()))
    expect(none).toEqual([])

    // --- the receiver's URL: created, signed, the secret never shown again
    await page.locator('#nf-url').fill(receiver.url)
    expect(await page.locator('#nf-url-error').count()).toBe(0)
    await dialog.getByRole('button', { name: 'Add a notification' }).click()
    await dialog.waitFor({ state: 'detached' })
    await page.getByRole('status').getByText(`The notification ${NAME} was added.`).waitFor()
    const row = notificationRow(page, NAME)
    await row.waitFor()
    expect(await row.locator('.nf-sends').textContent()).toContain('SOS')
    expect(await row.textContent()).toContain(`127.0.0.1:${receiver.port}`)
    expect(await row.textContent()).toContain('signed')
    expect(await row.textContent()).toContain('All devices')
    expect(await row.textContent()).toContain('On')
    const stored = (await page.evaluate(() => fetch('notifications').then((r) => r.json()))) as { events: string[]; channel: Record<string, unknown> }[]
    expect(stored).toHaveLength(1)
    expect(stored[0]!.events).toEqual(['sos'])
    expect(stored[0]!.channel).toMatchObject({ url: receiver.url, secret_set: true, positions: false })
    expect(await html(page)).not.toContain(SECRET)
    await shot(page, 'notifications-list-desktop')

    // editing: the secret field is empty and says one is set
    await page.getByRole('button', { name: `Edit ${NAME}` }).click()
    const edit = page.getByRole('dialog', { name: `Edit ${NAME}` })
    await edit.waitFor()
    expect(await page.locator('#nf-secret').inputValue()).toBe('')
    expect(await page.locator('#nf-secret-hint').textContent()).toBe('A secret is set — type to replace it (at least 16 characters). It is never shown.')
    expect(await edit.locator('.nf-codes input[value="sos"]').isChecked()).toBe(true)
    expect(await page.locator('#nf-url').inputValue()).toBe(receiver.url)
    expect(await html(page)).not.toContain(SECRET)
    await shot(page, 'notifications-edit-desktop')
    await page.keyboard.press('Escape')
    await edit.waitFor({ state: 'detached' })

    // --- a test delivery: signed, and the page says it arrived
    await page.getByRole('button', { name: `Deliveries and test of ${NAME}` }).click()
    const log = page.getByRole('dialog', { name: `${NAME}: test and deliveries` })
    await log.waitFor()
    await log.getByText('No delivery yet.').waitFor()
    await log.getByRole('button', { name: 'Send a test' }).click()
    await log.getByRole('status').getByText('The test was delivered: the receiver answered HTTP 204.').waitFor()
    expect(receiver.received).toHaveLength(1)
    const testDelivery = receiver.received[0]!
    expect(testDelivery.json).toMatchObject({ type: 'test', notification: { name: NAME } })
    expect(verifySignature(testDelivery.headers.get('x-tracker-signature'), testDelivery.body, SECRET).ok).toBe(true)
    const testRow = await logRow(log, '[data-type="test"][data-status="delivered"]')
    expect(await testRow.getAttribute('data-id')).toBe(testDelivery.headers.get('x-tracker-delivery'))
    expect(await testRow.textContent()).toContain('Delivered')

    // --- an SOS over OsmAnd: delivered, signed, and in the log as delivered
    await sendAlarm('sos')
    await until(() => receiver.received.length === 2, 'the SOS delivery')
    const sos = receiver.received[1]!
    expect(sos.json).toMatchObject({ type: 'event', event: { alarm_code: 'sos', device: { id: ids.truck1, alias: 'Truck 1' } } })
    expect(verifySignature(sos.headers.get('x-tracker-signature'), sos.body, SECRET).ok).toBe(true)
    const sosRow = await logRow(log, `[data-id="${sos.headers.get('x-tracker-delivery')}"][data-status="delivered"]`)
    expect(await sosRow.locator('.nf-what').textContent()).toBe('SOS · Truck 1')
    expect(await sosRow.locator('.nf-answer').textContent()).toBe('HTTP 204')
    expect(await sosRow.locator('.nf-when').textContent()).toMatch(/^Delivered /)
    expect(await log.locator('.nf-last').textContent()).toContain('Delivered')
    await shot(page, 'notifications-log-desktop')

    // --- the receiver answers 500: the test fails in words; an SOS waits, pending, with its status code
    answerStatus = 500
    await log.getByRole('button', { name: 'Send a test' }).click()
    await log.getByRole('status').getByText('The test was not delivered: the receiver answered HTTP 500.').waitFor()
    await sendAlarm('sos')
    await until(() => receiver.received.length === 4, 'the second SOS delivery')
    const failed = receiver.received[3]!
    expect(failed.json).toMatchObject({ type: 'event', event: { alarm_code: 'sos' } })
    const pendingRow = await logRow(log, `[data-id="${failed.headers.get('x-tracker-delivery')}"][data-status="pending"]`)
    // the outcome is written once the receiver's answer is in
    await until(async () => {
      if ((await pendingRow.locator('.nf-answer').textContent()) === 'HTTP 500') return true
      await log.getByRole('button', { name: 'Refresh' }).click()
      await Bun.sleep(150)
      return false
    }, 'the 500 in the log')
    expect(await pendingRow.locator('.nf-attempts').textContent()).toBe('1')
    expect(await pendingRow.textContent()).toContain('Pending')
    expect(await pendingRow.locator('.nf-when').textContent()).toMatch(/^Next attempt /)
    expect(await log.locator('.delivery-table tbody tr[data-status="dead"][data-type="test"]').count()).toBe(1)
    expect(await html(page)).not.toContain(SECRET)
    await shot(page, 'notifications-log-failing-desktop')
    answerStatus = 204

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 40_000)

  test('on a phone: the list and the log as cards, an edit, and a delete with its confirmation', async () => {
    const { context, page, watch } = await watchedPage(browser, server.base, { viewport: PHONE })
    await signIn(page, server.base, 'dana')
    await page.goto(`${server.base}/#/admin/notifications`)
    const row = notificationRow(page, NAME)
    await row.waitFor()
    await shot(page, 'notifications-list-phone')

    await page.getByRole('button', { name: `Deliveries and test of ${NAME}` }).click()
    const log = page.getByRole('dialog', { name: `${NAME}: test and deliveries` })
    await log.waitFor()
    await log.locator('.delivery-table tbody tr').first().waitFor()
    expect(await log.locator('.delivery-table tbody tr').count()).toBe(4)
    await shot(page, 'notifications-log-phone')
    await page.keyboard.press('Escape')
    await log.waitFor({ state: 'detached' })

    // every event, to trucks only, off: the secret stays as it was
    await page.getByRole('button', { name: `Edit ${NAME}` }).click()
    const edit = page.getByRole('dialog', { name: `Edit ${NAME}` })
    await edit.waitFor()
    await edit.locator('#nf-every').check()
    expect(await edit.locator('.nf-codes input[value="sos"]').isVisible()).toBe(false)
    await edit.getByRole('checkbox', { name: /^Trucks/ }).check()
    await edit.locator('#nf-enabled').uncheck()
    await shot(page, 'notifications-edit-phone')
    await edit.getByRole('button', { name: 'Save changes' }).click()
    await edit.waitFor({ state: 'detached' })
    await page.getByRole('status').getByText(`The notification ${NAME} was saved.`).waitFor()
    await until(async () => (await row.locator('.nf-sends').textContent()) === 'Every event', 'the saved row')
    expect(await row.textContent()).toContain('Trucks')
    expect(await row.textContent()).toContain('Off')
    const stored = (await page.evaluate(() => fetch('notifications').then((r) => r.json()))) as { events: string[]; groups: string[]; enabled: boolean; channel: { secret_set: boolean } }[]
    expect(stored[0]).toMatchObject({ events: ['*'], groups: [ids.trucks], enabled: false, channel: { secret_set: true } })
    expect(await html(page)).not.toContain(SECRET)

    await page.getByRole('button', { name: `Delete ${NAME}` }).click()
    const confirm = page.getByRole('dialog', { name: `Delete the notification ${NAME}?` })
    await confirm.waitFor()
    const remove = confirm.getByRole('button', { name: 'Delete the notification' })
    // white on red, not red on red
    expect(await remove.evaluate((button) => getComputedStyle(button).color)).toBe('rgb(255, 255, 255)')
    await shot(page, 'notifications-delete-phone')
    await remove.click()
    await confirm.waitFor({ state: 'detached' })
    await page.getByText('No notification yet.').waitFor()
    expect(await page.evaluate(() => fetch('notifications').then((r) => r.json()))).toEqual([])

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 30_000)
})
