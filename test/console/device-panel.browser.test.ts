/**
 * What the device sent, on its panel, in a real browser (Debian's chromium, playwright-core)
 * against the real server in a child process. A Teltonika tracker reports over TCP, a day ago,
 * its battery, ignition, external power, GSM signal and odometer: its panel shows each of them in
 * its unit, the place ("City, CC") beside the coordinates, and the fix's day; a later status packet
 * (GT06, no fix) changes them through the live stream. An admin's device form
 * sets the speed limit and the plate into the device's properties and keeps the others; its
 * "State" offers no moving or stopped. Screenshots at 1280×800 and 390×844 go to test-output/.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type Browser, type Page } from 'playwright-core'
import { connectClient, gt06Login, gt06Status, hex, teltonikaImei, teltonikaPacket } from '../ingest/frames'
import { chromiumPresent, launchChromium, PLAIN_TILE, shot, signIn, startConsoleServer, watchedPage, type ConsoleServer } from './support'
import { baseDataset, ids, keys } from '../support/world'

const hasChromium = chromiumPresent('the device panel browser test')

const VAN1_IMEI = '359710049095003'
const DESKTOP = { width: 1280, height: 800 }
const PHONE = { width: 390, height: 844 }
const DAY_MS = 86_400_000
// Lyon, where the van stands
const LYON = { latitude: 45.764, longitude: 4.8357 }

let server: ConsoleServer
let browser: Browser
/** the van's newest fix, a day and two hours ago (never today) */
let fixAtMs: number

beforeAll(async () => {
  if (!hasChromium) return
  const dataset = baseDataset()
  // a property the form does not edit, beside the plate it does
  ;(dataset.devices[1] as { properties: Record<string, unknown> }).properties = { plate: 'AB-123-CD', driver: 'Sam' }
  server = await startConsoleServer({ name: 'device-panel', dataset, signIn: [ids.alice, ids.dana], ports: { teltonika: true, gt06: true } })
  browser = await launchChromium()

  fixAtMs = Math.floor((Date.now() - DAY_MS - 2 * 3_600_000) / 1000) * 1000
  const tracker = await connectClient(server.ports.teltonika)
  tracker.send(teltonikaImei(VAN1_IMEI))
  expect((await tracker.read(1))[0]).toBe(1)
  tracker.send(
    teltonikaPacket([
      {
        timestampMs: fixAtMs,
        ...LYON,
        speed: 0,
        // ignition on, GSM signal 4, battery 87 %, external power plugged (unplug 0)
        io1: { 239: 1, 21: 4, 113: 87, 252: 0 },
        // external 12.65 V, battery 4.1 V
        io2: { 66: 12_650, 67: 4_100 },
        // total odometer 123,456 m
        io4: { 16: 123_456 },
      },
    ]),
  )
  expect(hex(await tracker.read(4))).toBe('00 00 00 01')
  tracker.end()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

const api = (path: string, key: string, init: RequestInit = {}) => fetch(`${server.base}${path}`, { ...init, headers: { authorization: `Bearer ${key}`, ...init.headers } })
/** the panel's facts as "label: value" lines */
const facts = (page: Page) =>
  page.locator('section[aria-labelledby="status-h"] dl.facts').evaluate((dl) => {
    const lines: string[] = []
    for (const dt of Array.from(dl.querySelectorAll('dt'))) lines.push(`${dt.textContent}: ${(dt.nextElementSibling as HTMLElement).innerText.replace(/\s+/g, ' ')}`)
    return lines
  })

describe.skipIf(!hasChromium)('the device panel in chromium', () => {
  test('a device that sent its battery, ignition, power, signal and odometer a day ago: its panel shows each, the place and the day', async () => {
    // the phone first: the desktop's page then hears a status packet that changes what both would show
    for (const [viewport, name] of [
      [PHONE, 'phone'],
      [DESKTOP, 'desktop'],
    ] as const) {
      const { context, page, watch } = await watchedPage(browser, server.base, { viewport }, { tile: PLAIN_TILE })
      await signIn(page, server.base, 'alice')
      await page.goto(`${server.base}/#/devices/${ids.van1}`)
      await page.locator('.panel .status-odometer').waitFor()
      const lines = await facts(page)
      expect(lines).toContain('Battery: 87 % · 4.1 V')
      expect(lines).toContain('Ignition: On')
      expect(lines).toContain('External power: Connected · 12.65 V')
      expect(lines).toContain('GSM signal: 4')
      expect(lines).toContain('Odometer: 123.5 km')
      // the place beside the coordinates
      expect(lines).toContain('Position: Lyon, FR 45.76400, 4.83570')
      // nothing the device did not send, and no hole
      expect(lines.join('\n')).not.toMatch(/undefined|null|NaN|: $/m)

      // the fix is not today's: its day is said, in the facts and in the list of fixes
      const day = await page.evaluate((ms) => new Date(ms).toLocaleDateString([], { dateStyle: 'medium' }), fixAtMs)
      expect(await page.locator('.panel .newest-fix').innerText()).toContain(day)
      expect(await page.locator('table.fixes tbody tr').first().locator('td').first().innerText()).toContain(day)

      // nothing cut or overflowing the panel at this size
      const overflow = await page.locator('.panel').evaluate((panel) => {
        const box = panel.getBoundingClientRect()
        return Array.from(panel.querySelectorAll('dd, td')).filter((cell) => cell.getBoundingClientRect().right > box.right + 1).map((cell) => cell.textContent)
      })
      expect(overflow).toEqual([])
      await shot(page, `device-panel-status-${name}`)

      if (name === 'desktop') {
        // a GT06 status packet (no fix) comes by the stream: GSM level 3, external power cut; the battery's % stays
        const gt06 = await connectClient(server.ports.gt06)
        gt06.send(gt06Login(VAN1_IMEI, 1))
        await gt06.read(10)
        gt06.send(gt06Status(2))
        expect(hex(await gt06.read(10))).toStartWith('78 78 05 13 00 02')
        await page.locator('.panel .status-gsm', { hasText: /^3$/ }).waitFor()
        const after = await facts(page)
        expect(after).toContain('External power: Cut · 12.65 V')
        expect(after).toContain('Battery: 87 % · 4.1 V')
        expect(after).toContain('Ignition: On')
        gt06.end()
      }
      expect(watch.errors).toEqual([])
      expect(watch.leaks).toEqual([])
      await context.close()
    }
  }, 60_000)

  test('the device form saves the speed limit and the plate into the properties, keeps the others, and offers no moving or stopped', async () => {
    for (const [viewport, name] of [
      [DESKTOP, 'desktop'],
      [PHONE, 'phone'],
    ] as const) {
      const { context, page, watch } = await watchedPage(browser, server.base, { viewport }, { tile: PLAIN_TILE })
      await signIn(page, server.base, 'dana')
      await page.goto(`${server.base}/#/admin`)
      await page.getByRole('button', { name: 'Edit Truck 2' }).click()
      const dialog = page.getByRole('dialog', { name: 'Edit Truck 2' })
      await dialog.waitFor()
      // Truck 2 is stopped (and not connected, so it stays so): that stays shown as its state, but no state of the reports is offered besides
      const state = dialog.locator('#device-state')
      expect(await state.inputValue()).toBe('stopped')
      expect(await state.locator('option').allTextContents()).toEqual(['Stopped', 'New', 'Off', 'Suspended', 'Stolen'])

      if (name === 'desktop') {
        expect(await dialog.locator('#device-plate').inputValue()).toBe('AB-123-CD')
        // a speed limit that is no number is refused beside the field, and nothing is sent
        await dialog.locator('#device-speed-limit').fill('fast')
        await dialog.getByRole('button', { name: 'Save changes' }).click()
        expect(await dialog.locator('#device-speed-limit-error').innerText()).toContain('Enter a number of km/h')
        await dialog.locator('#device-speed-limit').fill('90')
        await dialog.locator('#device-plate').fill('XY-987-ZZ')
        await shot(page, `device-form-properties-${name}`)
        await dialog.getByRole('button', { name: 'Save changes' }).click()
        await dialog.waitFor({ state: 'detached' })
        const saved = (await (await api(`/devices/${ids.truck2}`, keys.dana)).json()) as { properties: Record<string, unknown>; state: string }
        expect(saved.properties).toEqual({ plate: 'XY-987-ZZ', driver: 'Sam', speed_limit: 90 })
        // the state was not sent back: it is still what the reports made it
        expect(saved.state).toBe('stopped')
        // the panel names them in its details
        await page.goto(`${server.base}/#/devices/${ids.truck2}`)
        const details = page.locator('section[aria-labelledby="details-h"] dl.facts')
        await details.getByText('Speed limit', { exact: true }).waitFor()
        const detailLines = await details.evaluate((dl) => Array.from(dl.querySelectorAll('dt')).map((dt) => `${dt.textContent}: ${dt.nextElementSibling!.textContent}`))
        expect(detailLines).toContain('Speed limit: 90 km/h')
        expect(detailLines).toContain('Plate: XY-987-ZZ')
        expect(detailLines).toContain('driver: Sam')
      } else {
        // read back as saved
        expect(await dialog.locator('#device-speed-limit').inputValue()).toBe('90')
        expect(await dialog.locator('#device-plate').inputValue()).toBe('XY-987-ZZ')
        await dialog.locator('#device-plate').scrollIntoViewIfNeeded()
        await shot(page, `device-form-properties-${name}`)
        // emptied, the limit and the plate go; the driver stays
        await dialog.locator('#device-speed-limit').fill('')
        await dialog.locator('#device-plate').fill('')
        await dialog.getByRole('button', { name: 'Save changes' }).click()
        await dialog.waitFor({ state: 'detached' })
        const saved = (await (await api(`/devices/${ids.truck2}`, keys.dana)).json()) as { properties: Record<string, unknown> }
        expect(saved.properties).toEqual({ driver: 'Sam' })
      }
      expect(watch.errors).toEqual([])
      expect(watch.leaks).toEqual([])
      await context.close()
    }
  }, 60_000)
})
