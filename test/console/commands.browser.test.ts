/**
 * Sending a command from the console's device panel, in chromium against the real server in a
 * child process, to a simulated GT06 tracker connected over TCP: the button asks for its
 * confirmation, the tracker receives the online command, answers it, and the panel shows the
 * answer arriving (the live stream's command_answered) without a reload. A form sends its values
 * (the password never shown again) and shows the API's word on a bad one. No page error, no request
 * leaving the host; screenshots at desktop and phone size in test-output/.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type Browser } from 'playwright-core'
import { buildGt06Frame } from '../../src/ingest/protocols/gt06/replies'
import { commandDataset } from '../commands/support'
import { connectClient, gt06Login, hex, type TestClient } from '../ingest/frames'
import { chromiumPresent, launchChromium, PLAIN_TILE, shot, signIn, startConsoleServer, watchedPage, type ConsoleServer } from './support'
import { ids } from '../support/world'

const hasChromium = chromiumPresent('the command browser test')

const TRUCK1_IMEI = '359710049095001'

let server: ConsoleServer
let base: string
let browser: Browser
let tracker: TestClient

beforeAll(async () => {
  if (!hasChromium) return
  const now = Math.floor(Date.now() / 1000)
  const dataset = { ...commandDataset(), positions: [{ device: ids.truck1, timestamp: now - 60, latitude: 48.8566, longitude: 2.3522, speed: 0 }] }
  server = await startConsoleServer({ name: 'console-commands', dataset, signIn: [ids.alice], ports: { gt06: true } })
  base = server.base
  browser = await launchChromium()
  // the tracker is connected before anyone sends it anything
  tracker = await connectClient(server.ports.gt06)
  tracker.send(gt06Login(TRUCK1_IMEI, 1))
  expect(hex(await tracker.read(10, 5000))).toBe('78 78 05 01 00 01 D9 DC 0D 0A')
}, 60_000)

afterAll(async () => {
  tracker?.end()
  await browser?.close()
  await server?.stop()
})

/** The next online command the tracker receives: its server flag and its text. */
async function receiveCommand(): Promise<{ flag: number; text: string }> {
  const head = await tracker.read(3, 5000)
  const rest = await tracker.read(head[2] + 2)
  const frame = Uint8Array.from([...head, ...rest])
  expect(frame[3]).toBe(0x80)
  const view = new DataView(frame.buffer)
  const length = frame[4]
  return { flag: view.getUint32(5), text: new TextDecoder().decode(frame.subarray(9, 5 + length)) }
}

/** The tracker's answer (0x15) to the command sent with `flag`. */
function answer(text: string, flag: number): void {
  const bytes = Array.from(text, (c) => c.charCodeAt(0))
  tracker.send(buildGt06Frame(0x15, Uint8Array.from([4 + bytes.length, flag >>> 24, (flag >>> 16) & 0xff, (flag >>> 8) & 0xff, flag & 0xff, ...bytes, 0x00, 0x02]), 0x30))
}

describe.skipIf(!hasChromium)('sending commands from the console', () => {
  test('a button with its confirmation, a form, a bad value; the answers arrive live', async () => {
    // the browser notes the 400 and 409 this test asks for on purpose
    const { context, page, watch } = await watchedPage(browser, base, { viewport: { width: 1280, height: 800 } }, { tile: PLAIN_TILE, expectedConsoleErrors: /status of (400|409)/ })
    const { errors, leaks } = watch

    await signIn(page, base, 'alice')
    await page.goto(`${base}/#/devices/${ids.truck1}`)
    await page.locator('.panel-title').waitFor()
    await page.getByText('No command sent to this device yet.').waitFor()

    // --- a button that asks first: nothing goes until the question is answered
    const stop = page.getByRole('button', { name: 'Stop engine' })
    await stop.click()
    const question = page.getByRole('group', { name: 'The vehicle will stop. Continue?' })
    await question.waitFor()
    const confirm = page.getByRole('button', { name: 'Yes, stop engine' })
    expect(await confirm.evaluate((element) => element === document.activeElement)).toBe(true)
    await shot(page, 'console-command-confirm-desktop')
    // Escape takes it back, focus and all
    await page.keyboard.press('Escape')
    await stop.waitFor()
    await page.waitForFunction(() => document.activeElement?.textContent === 'Stop engine')
    expect(tracker.pending).toBe(0)
    await stop.click()
    await confirm.click()
    const received = await receiveCommand()
    expect(received.text).toBe('RELAY,1#')
    const engineStop = page.locator('.sent', { hasText: 'Engine stop' })
    await engineStop.waitFor()

    // --- the tracker answers: the panel shows it, live
    answer('Cut off the fuel supply: Success!', received.flag)
    await page.locator('.sent[data-status="answered"]', { hasText: 'Cut off the fuel supply: Success!' }).waitFor({ timeout: 5000 })
    expect(await engineStop.locator('.sent-status').textContent()).toBe('Answered')

    // --- a form: a number field left empty is the API's 400, named at the field
    await page.getByLabel('Seconds').fill('')
    await page.locator('form.command', { hasText: 'Set interval' }).getByRole('button', { name: 'Send' }).click()
    await page.getByText('Seconds must be a number.').waitFor()
    expect(await page.getByLabel('Seconds').getAttribute('aria-invalid')).toBe('true')
    expect(await page.locator('form.command', { hasText: 'Set interval' }).locator('.alert').count()).toBe(0)
    // a command its model gives no text: the API's 409, said where it was pressed
    await page.getByRole('button', { name: 'Reboot' }).click()
    await page.locator('.command', { hasText: 'Reboot' }).getByRole('alert').getByText('cannot be sent').waitFor()

    // --- a form with a password: the tracker gets it, the page never shows it again
    await page.getByLabel('APN').fill('internet.example')
    await page.getByLabel('Password', { exact: true }).fill('hunter2')
    await page.locator('form.command', { hasText: 'Set APN' }).getByRole('button', { name: 'Send' }).click()
    const apn = await receiveCommand()
    expect(apn.text).toBe('APN,internet.example,,hunter2#')
    const apnItem = page.locator('.sent', { hasText: 'Set APN' })
    await apnItem.waitFor()
    expect(await apnItem.locator('.sent-text').textContent()).toBe('APN,internet.example,,***#')
    expect(await page.getByRole('textbox', { name: 'APN' }).inputValue()).toBe('')
    answer('APN:internet.example OK', apn.flag)
    await page.locator('.sent[data-status="answered"]', { hasText: 'APN:internet.example OK' }).waitFor({ timeout: 5000 })
    expect(await page.content()).not.toContain('hunter2')
    expect(await page.locator('.sent').count()).toBe(2)
    await page.locator('.sent-commands').scrollIntoViewIfNeeded()
    await shot(page, 'console-command-answered-desktop')

    await page.setViewportSize({ width: 390, height: 844 })
    await page.locator('.sent-commands').scrollIntoViewIfNeeded()
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await shot(page, 'console-command-answered-phone')

    expect(errors).toEqual([])
    expect(leaks).toEqual([])
    await context.close()
  }, 60_000)
})
