/**
 * Devices without homework (issue 20, item 2), in chromium against the real server in a child
 * process: Dana, Acme's admin, adds a phone with a name and an identifier only (its first OsmAnd
 * fix gives it the OsmAnd built-in model), then gives a model's command its send text, a field
 * pattern and an optional field in the model editor, and sends it from the device panel to a GT06
 * tracker connected over TCP: the tracker receives the text without the empty optional field.
 * Screenshots at 1280×800 and 390×844 in test-output/.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type Browser, type Page } from 'playwright-core'
import { osmand } from '../../src/ingest/protocols/osmand/descriptor'
import { commandDataset } from '../commands/support'
import { connectClient, gt06Login, hex, type TestClient } from '../ingest/frames'
import { chromiumPresent, launchChromium, PLAIN_TILE, shot, signIn, startConsoleServer, watchedPage, type ConsoleServer } from './support'
import { ids, keys } from '../support/world'

const hasChromium = chromiumPresent('the devices-without-homework browser test')

const TRUCK1_IMEI = '359710049095001'
const DESKTOP = { width: 1280, height: 800 }
const PHONE = { width: 390, height: 844 }

let server: ConsoleServer
let base: string
let browser: Browser
let tracker: TestClient | null = null

beforeAll(async () => {
  if (!hasChromium) return
  server = await startConsoleServer({ name: 'console-homework', dataset: commandDataset(), signIn: [ids.dana], ports: { osmand: true, gt06: true } })
  base = server.base
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  tracker?.end()
  await browser?.close()
  await server?.stop()
})

const api = (method: string, path: string, body?: unknown) =>
  fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${keys.dana}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
const section = (page: Page, name: string) => page.getByRole('navigation', { name: 'Administration sections' }).getByRole('link', { name, exact: true })
const row = (page: Page, name: string) => page.locator('.admin-table tbody tr').filter({ has: page.locator('.cell-name', { hasText: new RegExp(`^${name}`) }) })

describe.skipIf(!hasChromium)('devices without homework in chromium', () => {
  test('a phone added with a name and an identifier only; its first fix gives it the OsmAnd built-in model', async () => {
    const { context, page, watch } = await watchedPage(browser, base, { viewport: DESKTOP }, { tile: PLAIN_TILE })
    await signIn(page, base, 'dana')
    await page.goto(`${base}/#/admin/devices`)
    await page.getByRole('heading', { name: 'Devices', level: 2 }).waitFor()
    await page.getByRole('button', { name: 'Add a device' }).click()
    const dialog = page.getByRole('dialog', { name: 'Add a device' })
    await dialog.waitFor()
    await page.locator('#device-alias').fill('My phone')
    await page.locator('#device-serial').fill('phone-77')
    // the model is left as it is: chosen from the protocol it reports on
    expect(await page.locator('#device-model option:checked').textContent()).toBe('From the protocol it reports on')
    await dialog.getByText('Chosen from the protocol it reports on').waitFor()
    await shot(page, 'homework-device-form-desktop')
    await dialog.getByRole('button', { name: 'Add a device' }).click()
    await dialog.waitFor({ state: 'detached' })
    await page.getByRole('status').getByText('My phone was added.').waitFor()
    await row(page, 'My phone').getByText('From its first report').waitFor()
    const id = (await row(page, 'My phone').getAttribute('data-id'))!
    expect(await (await api('GET', `/devices/${id}`)).json()).toMatchObject({ alias: 'My phone', serial: 'phone-77', model: null })
    await shot(page, 'homework-devices-desktop')

    // its first fix: the OsmAnd built-in model, named in the list
    const second = Math.floor(Date.now() / 1000) - 5
    expect((await fetch(`http://127.0.0.1:${server.ports.osmand}/?id=phone-77&lat=48.85&lon=2.35&timestamp=${second}`)).status).toBe(200)
    expect(await (await api('GET', `/devices/${id}`)).json()).toMatchObject({ model: osmand.model.id })
    await page.reload()
    await row(page, 'My phone').getByText(osmand.model.name).waitFor()

    await page.setViewportSize(PHONE)
    await page.getByRole('button', { name: 'Add a device' }).click()
    await page.locator('#device-alias').fill('Second phone')
    await shot(page, 'homework-device-form-phone')
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 60_000)

  test("the model editor sets a command's send text, a field's pattern and an optional field; the console sends it, the empty field left out", async () => {
    // a model of the account, made without send text (what the editor could not set before)
    const created = await api('POST', '/models', {
      name: 'Acme GT06',
      protocol: 'gt06',
      commands: [{ name: 'Set APN', widget: { type: 'form', fields: [{ name: 'apn', type: 'text', label: 'APN' }] } }],
    })
    expect(created.status).toBe(201)
    const model = (await created.json()) as { id: string }
    expect((await api('PATCH', `/devices/${ids.truck1}`, { model: model.id })).status).toBe(200)
    tracker = await connectClient(server.ports.gt06)
    tracker.send(gt06Login(TRUCK1_IMEI, 1))
    expect(hex(await tracker.read(10, 5000))).toBe('78 78 05 01 00 01 D9 DC 0D 0A')

    // the 400 on a value the pattern refuses is expected
    const { context, page, watch } = await watchedPage(browser, base, { viewport: DESKTOP }, { tile: PLAIN_TILE, expectedConsoleErrors: /status of 400/ })
    await signIn(page, base, 'dana')
    await page.goto(`${base}/#/admin/models`)
    await section(page, 'Models').waitFor()
    await page.getByRole('button', { name: 'Edit Acme GT06' }).click()
    const editor = page.getByRole('dialog', { name: 'Edit Acme GT06' })
    await editor.waitFor()
    // the protocol is one of the supported ones, from a list
    expect(await page.locator('#model-protocol option').allTextContents()).toEqual(['None', 'osmand', 'gt06', 'teltonika', 'h02', 'gps103', 'watch'])
    await editor.getByLabel(/^Text sent/).fill('APN,{apn},{user}#')
    await editor.getByLabel(/^Pattern/).fill('[a-z.]+')
    await editor.getByRole('button', { name: 'Add a field' }).click()
    await editor.getByLabel(/^Field name/).nth(1).fill('user')
    await editor.getByLabel('Label', { exact: true }).nth(1).fill('User')
    await editor.getByRole('checkbox', { name: 'Required' }).nth(1).uncheck()
    await shot(page, 'homework-model-editor-desktop')
    await editor.getByRole('button', { name: 'Save changes' }).click()
    await editor.waitFor({ state: 'detached' })
    const saved = (await (await api('GET', `/models/${model.id}`)).json()) as { commands: { send?: { text: string }; widget: { fields: unknown[] } }[] }
    expect(saved.commands[0]).toMatchObject({
      send: { text: 'APN,{apn},{user}#' },
      widget: {
        fields: [
          { name: 'apn', type: 'text', label: 'APN', pattern: '[a-z.]+', required: true },
          { name: 'user', type: 'text', label: 'User', required: false },
        ],
      },
    })

    // sent from the device panel: a value the pattern refuses is named at the field; then the tracker gets it
    await page.goto(`${base}/#/devices/${ids.truck1}`)
    const form = page.locator('form.command', { hasText: 'Set APN' })
    await form.waitFor()
    await form.getByLabel('APN').fill('Internet!')
    await form.getByRole('button', { name: 'Send' }).click()
    await page.getByText("must match the field's pattern").waitFor()
    await form.getByLabel('APN').fill('internet')
    await form.getByRole('button', { name: 'Send' }).click()
    const head = await tracker.read(3, 5000)
    const frame = Uint8Array.from([...head, ...(await tracker.read(head[2]! + 2))])
    expect(frame[3]).toBe(0x80)
    expect(new TextDecoder().decode(frame.subarray(9, 5 + frame[4]!))).toBe('APN,internet#')
    await page.locator('.sent', { hasText: 'Set APN' }).locator('.sent-text', { hasText: 'APN,internet#' }).waitFor()
    await shot(page, 'homework-command-sent-desktop')

    await page.setViewportSize(PHONE)
    await page.goto(`${base}/#/admin/models`)
    await page.getByRole('button', { name: 'Edit Acme GT06' }).click()
    await page.getByRole('dialog', { name: 'Edit Acme GT06' }).getByLabel(/^Pattern/).first().scrollIntoViewIfNeeded()
    await shot(page, 'homework-model-editor-phone')
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 60_000)
})
