/**
 * Administration › Devices lists the unknown identifiers that tried to report (a single-account
 * server, the only kind that shows them), and "Add" opens the device form filled in: the IMEI or
 * serial, and a model of the protocol it reported over. Real server in a child process, real
 * OsmAnd request and GT06 login, chromium; screenshots at 1280×800 and 390×844 in test-output/.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type Browser } from 'playwright-core'
import { connectClient, gt06Login } from '../ingest/frames'
import { baseDataset, ids } from '../support/world'
import { chromiumPresent, launchChromium, PLAIN_TILE, shot, signIn, startConsoleServer, watchedPage, type ConsoleServer } from './support'

const hasChromium = chromiumPresent('the unknown identifiers browser test')
const GT06_IMEI = '868120334455667'

let server: ConsoleServer
let browser: Browser

/** the base world without its second account */
function oneAccount() {
  const all = baseDataset()
  return {
    ...all,
    accounts: all.accounts.filter((a) => a.id === ids.acme),
    groups: all.groups.filter((g) => g.account === ids.acme),
    users: all.users.filter((u) => u.account === ids.acme),
    devices: all.devices.filter((d) => d.account === ids.acme),
  }
}

beforeAll(async () => {
  if (!hasChromium) return
  server = await startConsoleServer({ name: 'unknown-browser', dataset: oneAccount(), signIn: [ids.dana], ports: { osmand: true, gt06: true } })
  browser = await launchChromium()
  // a phone and a GT06 switched on before anyone added them
  const fix = await fetch(`http://127.0.0.1:${server.ports.osmand}/?id=phone-9&lat=48.85&lon=2.35&timestamp=${Math.floor(Date.now() / 1000) - 5}`)
  expect(fix.status).toBe(404)
  const gt06 = await connectClient(server.ports.gt06)
  gt06.send(gt06Login(GT06_IMEI))
  await gt06.closed
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

describe.skipIf(!hasChromium)('unknown identifiers in chromium', () => {
  test('the admin sees what tried to report, with its protocol; Add opens the device form filled in, and the added device leaves the list', async () => {
    const { context, page, watch } = await watchedPage(browser, server.base, { viewport: { width: 1280, height: 800 } }, { tile: PLAIN_TILE })
    await signIn(page, server.base, 'dana')
    await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Administration' }).click()
    const list = page.locator('section.admin-unknown')
    await list.getByRole('heading', { name: 'Tried to report, not added yet' }).waitFor()
    await page.waitForFunction(() => document.querySelectorAll('.admin-unknown tbody tr').length === 2)
    const rows = list.locator('tbody tr')
    // the most recent first: the GT06's login came after the phone's report
    expect(await rows.locator('th').allTextContents()).toEqual([GT06_IMEI, 'phone-9'])
    expect(await rows.nth(0).locator('td').nth(0).textContent()).toBe('GT06')
    expect(await rows.nth(1).locator('td').nth(0).textContent()).toBe('OsmAnd')
    expect(await rows.nth(0).locator('td').nth(3).textContent()).toBe('127.0.0.1')
    await list.scrollIntoViewIfNeeded()
    await shot(page, 'admin-unknown-desktop')

    await list.getByRole('button', { name: `Add the device ${GT06_IMEI}` }).click()
    const dialog = page.getByRole('dialog', { name: 'Add a device' })
    await dialog.waitFor()
    expect(await page.locator('#device-imei').inputValue()).toBe(GT06_IMEI)
    expect(await page.locator('#device-serial').inputValue()).toBe('')
    // a model of the protocol it reported over
    const model = await page.locator('#device-model').inputValue()
    expect(model).not.toBe('')
    expect(await page.locator(`#device-model option[value="${model}"]`).textContent()).toContain('(gt06)')
    await page.waitForFunction(() => document.activeElement?.id === 'device-alias', undefined, { timeout: 5000 })
    await page.keyboard.type('Van 7')
    await shot(page, 'admin-unknown-add-desktop')
    await dialog.getByRole('button', { name: 'Add a device' }).click()
    await dialog.waitFor({ state: 'detached' })
    await page.locator('.admin-table .cell-name', { hasText: 'Van 7' }).waitFor()
    expect(await page.locator('.admin-table tbody tr', { has: page.locator('.cell-name', { hasText: 'Van 7' }) }).locator('td').first().textContent()).toContain('GT06')
    // added: no longer unknown
    await page.waitForFunction(() => document.querySelectorAll('.admin-unknown tbody tr').length === 1)
    expect(await rows.locator('th').allTextContents()).toEqual(['phone-9'])
    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 30_000)

  test('on a phone: the list reads as cards, and Add fills the serial of an OsmAnd identifier', async () => {
    const { context, page, watch } = await watchedPage(browser, server.base, { viewport: { width: 390, height: 844 } }, { tile: PLAIN_TILE })
    await signIn(page, server.base, 'dana')
    await page.goto(`${server.base}/#/admin/devices`)
    const list = page.locator('section.admin-unknown')
    await page.waitForFunction(() => document.querySelectorAll('.admin-unknown tbody tr').length >= 1)
    // the models read (the device list names them)
    await page.locator('.admin-table tbody tr', { has: page.locator('.cell-name', { hasText: 'Van 7' }) }).locator('td').first().filter({ hasText: 'GT06' }).waitFor()
    await list.scrollIntoViewIfNeeded()
    await shot(page, 'admin-unknown-phone')
    await list.getByRole('button', { name: 'Add the device phone-9' }).click()
    await page.getByRole('dialog', { name: 'Add a device' }).waitFor()
    expect(await page.locator('#device-serial').inputValue()).toBe('phone-9')
    expect(await page.locator('#device-imei').inputValue()).toBe('')
    expect(await page.locator(`#device-model option[value="${await page.locator('#device-model').inputValue()}"]`).textContent()).toContain('(osmand)')
    await shot(page, 'admin-unknown-add-phone')
    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 30_000)
})
