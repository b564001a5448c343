/**
 * Administration › Notifications, email and Telegram, in a real browser (Debian's chromium,
 * playwright-core) against the real server in a child process, with a real SMTP server and a fake
 * Telegram Bot API on 127.0.0.1 in this test. Dana, Acme's admin, adds an SOS notification by
 * email (a bad address refused beside the field), sees the addresses in the list; an OsmAnd SOS
 * arrives as a mail naming Truck 1; she adds a Telegram one (the token never shown again, the
 * edit form says one is set), and its test reaches the chat. Screenshots at 1280×800 and 390×844.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { simpleParser } from 'mailparser'
import type { Browser, Page } from 'playwright-core'
import { type FakeTelegram, type Smtp, startSmtp, startTelegram } from '../alerts/messaging-receivers'
import { baseDataset, ids } from '../support/world'
import { chromiumPresent, type ConsoleServer, launchChromium, shot, signIn, startConsoleServer, watchedPage } from './support'

const hasChromium = chromiumPresent('the email and Telegram notifications browser test')

const TRUCK1_IMEI = '359710049095001'
const BOT_TOKEN = '7654321:AAFakeBotTokenForBrowserTest_abcdef'
const DESKTOP = { width: 1280, height: 800 }
const PHONE = { width: 390, height: 844 }

let server: ConsoleServer
let smtp: Smtp
let telegram: FakeTelegram
let browser: Browser

beforeAll(async () => {
  if (!hasChromium) return
  smtp = await startSmtp()
  telegram = startTelegram()
  server = await startConsoleServer({
    name: 'notifications-messaging-browser',
    dataset: baseDataset(),
    signIn: [ids.dana],
    ports: { osmand: true },
    env: { SMTP_URL: smtp.url, SMTP_FROM: 'Fleet tracker <tracker@fleet.example.com>', TELEGRAM_API_URL: telegram.url },
  })
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
  telegram?.stop()
  await smtp?.close()
})

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(50)
  }
}

const notificationRow = (page: Page, name: string) => page.locator('.notifications-table tbody tr').filter({ has: page.getByRole('rowheader', { name }) })
const html = async (page: Page) =>
  (await page.content()) + (await page.locator('input, textarea').evaluateAll((fields) => fields.map((f) => (f as HTMLInputElement).value).join('\n')))

describe.skipIf(!hasChromium)('email and Telegram notifications in chromium', () => {
  test('an admin adds an SOS by email (an SOS arrives as a mail) and by Telegram (its test reaches the chat; the token is never shown)', async () => {
    const { context, page, watch } = await watchedPage(browser, server.base, { viewport: DESKTOP }, { expectedConsoleErrors: /status of 400/ })
    await signIn(page, server.base, 'dana')
    await page.goto(`${server.base}/#/admin/notifications`)
    await page.getByText('No notification yet.').waitFor()

    // --- email: a bad address refused beside the field, then saved
    await page.getByRole('button', { name: 'Add a notification' }).click()
    const dialog = page.getByRole('dialog', { name: 'Add a notification' })
    await dialog.waitFor()
    await page.locator('#nf-name').fill('SOS by mail')
    await dialog.getByText('Email', { exact: true }).click()
    expect(await page.locator('#nf-url').count()).toBe(0)
    expect(await page.locator('#nf-kind-positions').count()).toBe(0)
    await page.locator('#nf-to').fill('ops@example.com, not-an-address')
    await dialog.locator('.nf-codes input[value="sos"]').check()
    await dialog.getByRole('button', { name: 'Add a notification' }).click()
    await page.locator('#nf-to-error').getByText('one email address', { exact: false }).waitFor()
    await shot(page, 'notifications-email-refused-desktop')
    await page.locator('#nf-to').fill('ops@example.com, owner@example.org')
    await dialog.getByRole('button', { name: 'Add a notification' }).click()
    await dialog.waitFor({ state: 'detached' })
    const mailRow = notificationRow(page, 'SOS by mail')
    await mailRow.waitFor()
    expect(await mailRow.textContent()).toContain('ops@example.com, owner@example.org')
    expect(await mailRow.textContent()).toContain('Email')

    // an SOS over OsmAnd: a mail naming the vehicle, the event and the place
    const query = new URLSearchParams({ id: TRUCK1_IMEI, lat: '45.7578', lon: '4.8320', timestamp: String(Math.floor(Date.now() / 1000) - 5), speed: '0', alarm: 'sos' })
    expect((await fetch(`http://127.0.0.1:${server.ports.osmand}/?${query}`, { method: 'POST' })).status).toBe(200)
    await until(() => smtp.mails.length === 1, 'the SOS mail')
    const mail = await simpleParser(smtp.mails[0]!.raw)
    expect(mail.subject).toBe('[Acme Logistics] Truck 1: SOS')
    expect(mail.text).toContain('Lyon, FR')
    expect(mail.text).toContain(`#/devices/${ids.truck1}`)

    // --- Telegram: chat id and token; the token never comes back
    await page.getByRole('button', { name: 'Add a notification' }).click()
    await dialog.waitFor()
    await page.locator('#nf-name').fill('SOS to Telegram')
    await dialog.getByText('Telegram', { exact: true }).click()
    await page.locator('#nf-chat').fill('-1001234567890')
    await page.locator('#nf-bot-token').fill(BOT_TOKEN)
    await dialog.locator('.nf-codes input[value="sos"]').check()
    await shot(page, 'notifications-telegram-form-desktop')
    await dialog.getByRole('button', { name: 'Add a notification' }).click()
    await dialog.waitFor({ state: 'detached' })
    const chatRow = notificationRow(page, 'SOS to Telegram')
    await chatRow.waitFor()
    expect(await chatRow.textContent()).toContain('chat -1001234567890 Telegram')
    expect(await html(page)).not.toContain(BOT_TOKEN)
    await shot(page, 'notifications-messaging-list-desktop')

    await page.getByRole('button', { name: 'Edit SOS to Telegram' }).click()
    const edit = page.getByRole('dialog', { name: 'Edit SOS to Telegram' })
    await edit.waitFor()
    expect(await page.locator('#nf-bot-token').inputValue()).toBe('')
    expect(await page.locator('#nf-bot-token-hint').textContent()).toContain('A token is set')
    expect(await page.locator('#nf-chat').inputValue()).toBe('-1001234567890')
    expect(await edit.locator('#nf-type-email').count()).toBe(0)
    await page.locator('#nf-chat').fill('-1009876543210')
    await edit.getByRole('button', { name: 'Save' }).click()
    await edit.waitFor({ state: 'detached' })
    await until(async () => (await chatRow.textContent())?.includes('chat -1009876543210') ?? false, 'the new chat id in the list')

    await page.getByRole('button', { name: 'Deliveries and test of SOS to Telegram' }).click()
    const log = page.getByRole('dialog', { name: 'SOS to Telegram: test and deliveries' })
    await log.waitFor()
    await log.getByRole('button', { name: 'Send a test' }).click()
    await log.getByRole('status').getByText('The test was delivered', { exact: false }).waitFor()
    const call = telegram.calls.at(-1)!
    expect(call.path).toBe(`/bot${BOT_TOKEN}/sendMessage`)
    expect(call.json.chat_id).toBe('-1009876543210')
    expect(await html(page)).not.toContain(BOT_TOKEN)
    await shot(page, 'notifications-telegram-log-desktop')
    await page.keyboard.press('Escape')
    await log.waitFor({ state: 'detached' })

    // --- on a phone: the list as cards, names and targets readable
    await page.setViewportSize(PHONE)
    await chatRow.waitFor()
    expect(await mailRow.textContent()).toContain('ops@example.com')
    await shot(page, 'notifications-messaging-list-phone')
    await page.getByRole('button', { name: 'Add a notification' }).click()
    await dialog.waitFor()
    await dialog.getByText('Email', { exact: true }).click()
    await page.locator('#nf-to').waitFor()
    await shot(page, 'notifications-email-form-phone')
    await page.keyboard.press('Escape')

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 60_000)
})
