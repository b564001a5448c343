/**
 * The owner's first day (issue 20's "done when"), in Debian's chromium against the real server in
 * a child process on a fresh database, APP_URL unset, opened at its IP address as on a Pi or a
 * VPS: setup from the logged link; a phone added with a name and an identifier only, whose first
 * OsmAnd report gives it the OsmAnd built-in model; yesterday's drive with a five-hour silence,
 * which History shows as no data and not as driving; a GT06 added with its built-in model and a
 * command sent to it over TCP; an SOS notification by email, and the GT06's SOS arriving as a mail
 * at a real SMTP server started here. Screenshots at 1280×800 and 390×844 in test-output/
 * (first-day-*.png).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { simpleParser } from 'mailparser'
import type { Browser, Page } from 'playwright-core'
import { gt06Model } from '../../src/ingest/protocols/gt06/model'
import { osmand } from '../../src/ingest/protocols/osmand/descriptor'
import { type Smtp, startSmtp } from '../alerts/messaging-receivers'
import { connectClient, gt06Alarm, gt06Login, hex, type TestClient } from '../ingest/frames'
import { freePort, serverEnv, spawnServer, type ServerProcess } from '../support/process'
import { serverDatabase, type ServerDatabase } from '../support/server-database'
import { chromiumPresent, launchChromium, OUTPUT, PLAIN_TILE, watchedPage } from './support'

const hasChromium = chromiumPresent("the owner's first day browser test")
const ROOT = join(import.meta.dir, '..', '..')
const PASSWORD = 'first day passphrase'
const ZONE = 'Europe/Paris'
const DESKTOP = { viewport: { width: 1280, height: 800 }, timezoneId: ZONE, locale: 'en-GB' }
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, timezoneId: ZONE, locale: 'en-GB' }
const VAN_IMEI = '359710049095009'

let database: ServerDatabase | undefined
let server: ServerProcess
let smtp: Smtp
let browser: Browser
let base: string
let setupLink: string
let osmandPort: number
let gt06Port: number
let tracker: TestClient | null = null

beforeAll(async () => {
  if (!hasChromium) return
  mkdirSync(OUTPUT, { recursive: true })
  smtp = await startSmtp()
  database = await serverDatabase('first-day')
  const port = freePort()
  osmandPort = freePort()
  gt06Port = freePort()
  base = `http://127.0.0.1:${port}`
  const env = {
    ...serverEnv(database, { http: port, osmand: osmandPort, teltonika: 0 }, 'info'),
    GT06_PORT: String(gt06Port),
    APP_URL: undefined,
    TILE_URL: 'http://tiles.test/{z}/{x}/{y}.png',
    SMTP_URL: smtp.url,
    SMTP_FROM: 'Pi Fleet <tracker@pi-fleet.example>',
  }
  server = spawnServer([process.execPath, '--max-http-header-size=65536', 'src/main.ts', 'serve'], { cwd: ROOT, env })
  setupLink = String((await server.waitFor((line) => typeof line.setup_url === 'string', 20_000)).setup_url)
  await server.waitFor((line) => line.msg === 'serving', 20_000)
  browser = await launchChromium()
}, 30_000)

afterAll(async () => {
  tracker?.end()
  await browser?.close()
  if (server?.child.exitCode === null) await server.terminate()
  await smtp?.close()
  await database?.close()
})

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(50)
  }
}

/** a screenshot once the map has settled */
async function shot(page: Page, name: string) {
  await page.waitForTimeout(400)
  await page.waitForFunction(() => !document.querySelector('.leaflet-zoom-anim'))
  await page.screenshot({ path: join(OUTPUT, `first-day-${name}.png`) })
}

const noWiderThanPhone = async (page: Page) => expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
const section = (page: Page, name: string) => page.getByRole('navigation', { name: 'Administration sections' }).getByRole('link', { name, exact: true })
const deviceRow = (page: Page, name: string) => page.locator('.admin-table tbody tr').filter({ has: page.locator('.cell-name', { hasText: new RegExp(`^${name}`) }) })

/** yesterday in Paris, as YYYY-MM-DD, and the epoch second of a Paris wall-clock time that day */
function yesterdayInParis(): { day: string; at: (hour: number, minute: number) => number } {
  const day = new Date(Date.now() - 86_400_000).toLocaleDateString('sv-SE', { timeZone: ZONE })
  // Paris is UTC+1 or UTC+2: try both offsets and keep the one whose wall clock matches
  const at = (hour: number, minute: number) => {
    for (const offset of [1, 2]) {
      const seconds = Date.parse(`${day}T${String(hour).padStart(2, '0')}:${String(minute).padStart(2, '0')}:00Z`) / 1000 - offset * 3600
      const wall = new Date(seconds * 1000).toLocaleTimeString('en-GB', { timeZone: ZONE, hour: '2-digit', minute: '2-digit' })
      if (wall === `${String(hour).padStart(2, '0')}:${String(minute).padStart(2, '0')}`) return seconds
    }
    throw new Error('no Paris offset fits')
  }
  return { day, at }
}

/** half an hour of driving east at 36 km/h from (lat, lon), a fix every 30 s, as the OsmAnd app sends it */
async function drive(id: string, fromSecond: number, lat: number, lon: number): Promise<void> {
  for (let k = 0; k <= 60; k++) {
    const query = new URLSearchParams({ id, lat: lat.toFixed(6), lon: (lon + k * 0.0041).toFixed(6), timestamp: String(fromSecond + k * 30), speed: '19.4' })
    const answer = await fetch(`http://127.0.0.1:${osmandPort}/?${query}`)
    expect(answer.status).toBe(200)
  }
}

describe.skipIf(!hasChromium)("the owner's first day in chromium", () => {
  test('setup from the IP address, a phone and a GT06 added without homework, a day with a gap, a command, an SOS by email', async () => {
    const { context, page, watch } = await watchedPage(browser, base, DESKTOP, { tile: PLAIN_TILE, expectedConsoleErrors: /status of 404/ })

    // 1. setup from the link the log names: the server's own address, not localhost
    expect(setupLink.startsWith(`${base}/setup?token=`)).toBe(true)
    await page.goto(setupLink)
    await page.getByLabel('Account name').fill('Pi Fleet')
    await page.getByLabel('Your sign-in name').fill('owner')
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
    await page.getByLabel('Repeat the password').fill(PASSWORD)
    await shot(page, 'setup-desktop')
    await page.getByRole('button', { name: 'Create the account and sign in' }).click()
    await page.locator('#done').waitFor({ state: 'visible' })
    await page.goto(`${base}/`)
    await page.locator('.who').waitFor({ state: 'attached' })

    // 2. a phone with a name and an identifier only
    await page.goto(`${base}/#/admin/devices`)
    await page.getByRole('button', { name: 'Add a device' }).first().click()
    const addDialog = page.getByRole('dialog', { name: 'Add a device' })
    await addDialog.waitFor()
    await page.locator('#device-alias').fill('My phone')
    await page.locator('#device-serial').fill('phone-1')
    await addDialog.getByRole('button', { name: 'Add a device' }).click()
    await addDialog.waitFor({ state: 'detached' })
    await deviceRow(page, 'My phone').waitFor()

    // yesterday: half an hour of driving, five hours of silence, half an hour more 14 km further east
    const { day, at } = yesterdayInParis()
    await drive('phone-1', at(8, 0), 48.8566, 2.3522)
    await drive('phone-1', at(14, 0), 48.8566, 2.3522 + 0.41 + 0.2)
    await page.reload()
    await deviceRow(page, 'My phone').getByText(osmand.model.name).waitFor()

    // 3. a GT06 with its built-in model
    await page.getByRole('button', { name: 'Add a device' }).first().click()
    await addDialog.waitFor()
    await page.locator('#device-alias').fill('Van 1')
    await page.locator('#device-imei').fill(VAN_IMEI)
    await page.locator('#device-model').selectOption({ label: `${gt06Model.name} (gt06)` })
    await shot(page, 'gt06-form-desktop')
    await addDialog.getByRole('button', { name: 'Add a device' }).click()
    await addDialog.waitFor({ state: 'detached' })
    await deviceRow(page, 'Van 1').getByText(gt06Model.name).waitFor()
    const vanId = (await deviceRow(page, 'Van 1').getAttribute('data-id'))!
    const phoneId = (await deviceRow(page, 'My phone').getAttribute('data-id'))!
    await shot(page, 'devices-desktop')

    // 4. an SOS by email
    await section(page, 'Notifications').click()
    await page.getByRole('button', { name: 'Add a notification' }).click()
    const notification = page.getByRole('dialog', { name: 'Add a notification' })
    await notification.waitFor()
    await page.locator('#nf-name').fill('SOS to me')
    await notification.getByText('Email', { exact: true }).click()
    await page.locator('#nf-to').fill('owner@pi-fleet.example')
    await notification.locator('.nf-codes input[value="sos"]').check()
    await notification.getByRole('button', { name: 'Add a notification' }).click()
    await notification.waitFor({ state: 'detached' })
    await page.locator('.notifications-table tbody tr').filter({ has: page.getByRole('rowheader', { name: 'SOS to me' }) }).waitFor()

    // the van connects over TCP; a command from its panel reaches it
    tracker = await connectClient(gt06Port)
    tracker.send(gt06Login(VAN_IMEI, 1))
    expect(hex(await tracker.read(10, 5000))).toBe('78 78 05 01 00 01 D9 DC 0D 0A')
    await page.goto(`${base}/#/devices/${vanId}`)
    await page.getByRole('button', { name: 'Ask for the position' }).click()
    const head = await tracker.read(3, 5000)
    const frame = Uint8Array.from([...head, ...(await tracker.read(head[2]! + 2))])
    expect(frame[3]).toBe(0x80)
    expect(new TextDecoder().decode(frame.subarray(9, 5 + frame[4]!))).toBe('WHERE#')
    await page.locator('.sent', { hasText: 'Position' }).locator('.sent-text', { hasText: 'WHERE#' }).waitFor()
    await shot(page, 'command-sent-desktop')

    // the van's SOS: a mail naming the van, the event, the place and a console link
    const now = Math.floor(Date.now() / 1000)
    tracker.send(gt06Alarm({ timestamp: now - 5, latitude: 45.7578, longitude: 4.832, speed: 0 }, 0x01, 2))
    await until(() => smtp.mails.length === 1, 'the SOS mail')
    const mail = await simpleParser(smtp.mails[0]!.raw)
    expect(smtp.mails[0]!.to).toEqual(['owner@pi-fleet.example'])
    expect(mail.subject).toBe('[Pi Fleet] Van 1: SOS')
    expect(mail.text).toContain('Lyon, FR')
    expect(mail.text).toContain(`${base}/#/devices/${vanId}`)
    await page.goto(`${base}/#/events`)
    await page.locator('.events-table tbody tr', { hasText: 'Van 1' }).locator('.ev-alarm-name', { hasText: 'SOS' }).first().waitFor()
    await shot(page, 'sos-desktop')

    // 5. yesterday's history: two travels and the silence between them as no data
    await page.goto(`${base}/#/history/${phoneId}/${day}`)
    const travels = page.locator('table.travels tbody tr')
    await travels.first().waitFor()
    expect(await travels.count()).toBe(2)
    expect(await page.locator('.stops li.gap-row').count()).toBe(1)
    expect(await page.locator('.stops li.gap-row').innerText()).toContain('No data 08:30 – 14:00')
    const summary = (await page.evaluate(
      ([device, from, to]) => fetch(`devices/${device}/history/travels?from=${from}&to=${to}`).then((res) => res.json()),
      [phoneId, at(7, 0), at(15, 0)] as const,
    )) as { total_duration: number }
    // about an hour of driving, never the silence
    expect(summary.total_duration).toBeLessThanOrEqual(3600)
    await shot(page, 'history-gap-desktop')

    // the same day on a phone
    const phone = await watchedPage(browser, base, PHONE, { tile: PLAIN_TILE, expectedConsoleErrors: /status of 404/ })
    await phone.page.goto(`${base}/`)
    await phone.page.locator('#signin-name').fill('owner')
    await phone.page.locator('#signin-password').fill(PASSWORD)
    await phone.page.keyboard.press('Enter')
    await phone.page.locator('.who').waitFor({ state: 'attached' })
    await phone.page.goto(`${base}/#/admin/devices`)
    await deviceRow(phone.page, 'Van 1').waitFor()
    await shot(phone.page, 'devices-phone')
    await noWiderThanPhone(phone.page)
    await phone.page.goto(`${base}/#/devices/${vanId}`)
    await phone.page.locator('.sent', { hasText: 'Position' }).first().waitFor()
    await shot(phone.page, 'command-sent-phone')
    await noWiderThanPhone(phone.page)
    await phone.page.goto(`${base}/#/history/${phoneId}/${day}`)
    await phone.page.locator('.stops li.gap-row').waitFor({ state: 'attached' })
    await shot(phone.page, 'history-gap-phone')
    await noWiderThanPhone(phone.page)
    await phone.page.goto(`${base}/#/events`)
    await phone.page.locator('.events-table tbody tr', { hasText: 'Van 1' }).locator('.ev-alarm-name', { hasText: 'SOS' }).first().waitFor()
    await shot(phone.page, 'sos-phone')
    await noWiderThanPhone(phone.page)

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    expect(phone.watch.errors).toEqual([])
    expect(phone.watch.leaks).toEqual([])
    await phone.context.close()
    await context.close()
  }, 120_000)
})
