/**
 * "My email alerts" in a real browser (Debian's chromium, playwright-core) against the real server
 * in a child process, with a real SMTP server on 127.0.0.1 in this test. Bob, a member of Vans,
 * opens it ("Email alerts") beside "Change password", is told an address is needed, picks SOS and saves; an OsmAnd
 * SOS of Van 1 (his) arrives as a mail to him, one of Truck 1 (not his) does not. On a server
 * without SMTP_URL the dialog says email is not configured and cannot turn alerts on.
 * Screenshots at 1280×800 and 390×844.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { simpleParser } from 'mailparser'
import type { Browser, Page } from 'playwright-core'
import { type Smtp, startSmtp } from '../alerts/messaging-receivers'
import { baseDataset, ids } from '../support/world'
import { chromiumPresent, type ConsoleServer, launchChromium, openAccountMenu, shot, signIn, startConsoleServer, watchedPage } from './support'

const hasChromium = chromiumPresent('the email alerts browser test')

const TRUCK1_IMEI = '359710049095001'
const VAN1_IMEI = '359710049095003'
const DESKTOP = { width: 1280, height: 800 }
const PHONE = { width: 390, height: 844 }

let server: ConsoleServer
let smtp: Smtp
let browser: Browser

beforeAll(async () => {
  if (!hasChromium) return
  smtp = await startSmtp()
  server = await startConsoleServer({
    name: 'email-alerts-browser',
    dataset: baseDataset(),
    signIn: [ids.bob],
    ports: { osmand: true },
    env: { SMTP_URL: smtp.url, SMTP_FROM: 'Fleet tracker <tracker@fleet.example.com>' },
  })
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
  await smtp?.close()
})

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(50)
  }
}

async function sos(port: number, imei: string, secondsAgo: number) {
  const query = new URLSearchParams({ id: imei, lat: '45.7578', lon: '4.8320', timestamp: String(Math.floor(Date.now() / 1000) - secondsAgo), speed: '0', alarm: 'sos' })
  expect((await fetch(`http://127.0.0.1:${port}/?${query}`, { method: 'POST' })).status).toBe(200)
}

const openAlerts = async (page: Page) => {
  await openAccountMenu(page)
  await page.getByRole('button', { name: 'Email alerts', exact: true }).click()
  const dialog = page.getByRole('dialog', { name: 'My email alerts' })
  await dialog.waitFor()
  await dialog.locator('#ea-enabled').waitFor()
  return dialog
}

describe.skipIf(!hasChromium)('my email alerts in chromium', () => {
  test('a member picks SOS, gives an address and saves; an SOS of his van arrives by mail, one of a truck he cannot see does not', async () => {
    const { context, page, watch } = await watchedPage(browser, server.base, { viewport: DESKTOP })
    await signIn(page, server.base, 'bob')
    // in the menu under her name, beside Change password
    const account = page.locator('.account')
    expect(await account.getByRole('button').allTextContents()).toEqual(['bob · Acme Logistics'])
    await openAccountMenu(page)
    await shot(page, 'account-menu-desktop')
    expect(await account.locator('#account-menu').getByRole('button').allTextContents()).toEqual(['Time zone', 'Email alerts', 'Change password', 'Sign out'])

    let dialog = await openAlerts(page)
    expect(await dialog.locator('.note').textContent()).toContain('Only devices you can see')
    expect(await dialog.locator('#ea-enabled').isChecked()).toBe(false)
    expect(await dialog.locator('#ea-address').inputValue()).toBe('')
    expect(await dialog.locator('.nf-codes .pick-item').first().textContent()).toBe('Alarm')
    expect(await dialog.getByLabel('SOS', { exact: true }).count()).toBe(1)

    // turned on with nothing else: the address and the events are asked for, beside them
    await dialog.locator('#ea-enabled').check()
    await dialog.getByRole('button', { name: 'Save' }).click()
    await page.locator('#ea-address-error').getByText('Enter the address the mails go to.').waitFor()
    await page.locator('#ea-events-error').getByText('Choose at least one event').waitFor()
    await shot(page, 'email-alerts-refused-desktop')

    await page.locator('#ea-address').fill('bob@example.com')
    await dialog.getByLabel('SOS', { exact: true }).check()
    await dialog.getByLabel('Power cut', { exact: true }).check()
    await shot(page, 'email-alerts-form-desktop')
    await dialog.getByRole('button', { name: 'Save' }).click()
    await dialog.waitFor({ state: 'detached' })
    await account.getByRole('status').getByText('Email alerts saved.').waitFor()
    // the menu closed with the choice; its note stays, and the header's line holds the name and the menu
    expect(await page.locator('#account-toggle').getAttribute('aria-expanded')).toBe('false')
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(DESKTOP.width)
    await openAccountMenu(page)
    const signOut = await page.getByRole('button', { name: 'Sign out' }).boundingBox()
    expect(signOut!.x + signOut!.width).toBeLessThanOrEqual(DESKTOP.width)
    await page.keyboard.press('Escape')
    await shot(page, 'email-alerts-saved-desktop')

    // a truck he cannot see first, then his van: only the van's SOS is mailed, to him
    await sos(server.ports.osmand, TRUCK1_IMEI, 10)
    await sos(server.ports.osmand, VAN1_IMEI, 5)
    await until(() => smtp.mails.length >= 1, 'the SOS mail')
    const mail = await simpleParser(smtp.mails[0]!.raw)
    expect(smtp.mails[0]!.to).toEqual(['bob@example.com'])
    expect(mail.subject).toBe('[Acme Logistics] Van 1: SOS')
    expect(mail.text).toContain('Lyon, FR')

    // opened again: what was saved
    dialog = await openAlerts(page)
    expect(await dialog.locator('#ea-enabled').isChecked()).toBe(true)
    expect(await dialog.locator('#ea-address').inputValue()).toBe('bob@example.com')
    expect(await dialog.locator('.nf-codes input:checked').evaluateAll((inputs) => inputs.map((i) => (i as HTMLInputElement).value))).toEqual(['sos', 'power_cut'])
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'detached' })

    // on a phone: from the menu
    await page.setViewportSize(PHONE)
    await page.getByRole('button', { name: 'Menu' }).click()
    await page.getByRole('button', { name: 'Email alerts', exact: true }).waitFor()
    await shot(page, 'email-alerts-menu-phone')
    dialog = await openAlerts(page)
    await shot(page, 'email-alerts-form-phone')
    await dialog.locator('.nf-codes').scrollIntoViewIfNeeded()
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'detached' })

    // Truck 1's SOS, sent first, never came
    expect(smtp.mails.map((m) => m.to.join(','))).toEqual(['bob@example.com'])
    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 60_000)

  test('without SMTP_URL the dialog says email is not configured on this server, and alerts cannot be turned on', async () => {
    const bare = await startConsoleServer({ name: 'email-alerts-bare-browser', dataset: baseDataset(), signIn: [ids.bob] })
    try {
      const { context, page, watch } = await watchedPage(browser, bare.base, { viewport: PHONE })
      await signIn(page, bare.base, 'bob')
      await page.getByRole('button', { name: 'Menu' }).click()
      const dialog = await openAlerts(page)
      expect(await dialog.locator('#email-alerts-unconfigured').textContent()).toContain('Email is not configured on this server')
      expect(await dialog.locator('#ea-enabled').isDisabled()).toBe(true)
      await shot(page, 'email-alerts-unconfigured-phone')
      await page.setViewportSize(DESKTOP)
      await shot(page, 'email-alerts-unconfigured-desktop')
      expect(watch.errors).toEqual([])
      await context.close()
    } finally {
      await bare.stop()
    }
  }, 60_000)
})
