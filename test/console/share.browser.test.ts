/**
 * The console's share links in a real browser (Debian's chromium, playwright-core, the real
 * server in a child process). Alice creates a link for two trucks, sees its short link and QR code
 * (read back with jsQR), copies it, opens it as a stranger would, sees it counted, revokes it and
 * sees it marked revoked while the short link now shows the ended page. On a phone, without the
 * Clipboard API, Copy selects the link; a custom expiry and a change of expiry. No page error; no
 * request leaves the host but the map tiles. Screenshots to test-output/.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import jsQR from 'jsqr'
import { type Browser, type Page } from 'playwright-core'
import { PERMISSION } from '../../src/share/permissions'
import { chromiumPresent, launchChromium, PASSWORD, shot, startConsoleServer, watchedPage, type ConsoleServer } from './support'
import { baseDataset, ids } from '../support/world'

const hasChromium = chromiumPresent('the share-link browser test')

const DAY_S = 86_400

const now = Math.floor(Date.now() / 1000)
const positions = [
  ...Array.from({ length: 6 }, (_, i) => ({ device: ids.truck1, timestamp: now - 600 + i * 60, latitude: 48.85 + i * 0.001, longitude: 2.3 + i * 0.004, speed: 42, course: 80 })),
  { device: ids.truck2, timestamp: now - 3600, latitude: 48.87, longitude: 2.35, speed: 0 },
]

let server: ConsoleServer
let base: string
let browser: Browser

beforeAll(async () => {
  if (!hasChromium) return
  server = await startConsoleServer({ name: 'share-browser', dataset: { ...baseDataset(), positions }, signIn: [ids.alice], ports: { osmand: true } })
  base = server.base
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

/** the share-link API's changing calls: method, path, Origin */
type Change = { method: string; path: string; origin: string | null }

async function newContext(viewport: { width: number; height: number }, options: { clipboard: boolean }) {
  const changes: Change[] = []
  const watched = await watchedPage(browser, base, { viewport, permissions: options.clipboard ? ['clipboard-read', 'clipboard-write'] : [] }, {
    // 410: the ended link's page, on purpose
    expectedConsoleErrors: /status of 410/,
    onPage: (page) => noteChanges(page, changes),
  })
  // a page where the Clipboard API is missing (as on plain http to a LAN address)
  if (!options.clipboard) await watched.context.addInitScript(() => Object.defineProperty(Navigator.prototype, 'clipboard', { get: () => undefined }))
  return { ...watched, watch: { ...watched.watch, changes } }
}

function noteChanges(page: Page, changes: Change[]) {
  page.on('request', (request) => {
    const url = new URL(request.url())
    if (request.method() !== 'GET' && url.pathname.startsWith('/devices/share')) {
      changes.push({ method: request.method(), path: url.pathname, origin: request.headers().origin ?? null })
    }
  })
}

async function signIn(page: Page) {
  await page.goto(`${base}/#/share`)
  await page.locator('#signin-name').fill('alice')
  await page.locator('#signin-password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Share links', level: 1 }).waitFor()
  await page.waitForFunction(() => document.querySelectorAll('.share-pick').length === 3)
}

/** The QR code as a camera would see it: the SVG drawn on a canvas, its pixels read by jsQR. */
async function readQr(page: Page, svg: string): Promise<string | null> {
  const side = 300
  const pixels = await page.locator(svg).evaluate(async (element, size) => {
    const image = new Image()
    image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(new XMLSerializer().serializeToString(element))}`
    await image.decode()
    const canvas = document.createElement('canvas')
    canvas.width = canvas.height = size
    const context = canvas.getContext('2d')!
    context.drawImage(image, 0, 0, size, size)
    return Array.from(context.getImageData(0, 0, size, size).data)
  }, side)
  return jsQR(Uint8ClampedArray.from(pixels), side, side)?.data ?? null
}

const linkRow = (page: Page, id: string) => page.locator(`.share-link[data-link="${id}"]`)

describe.skipIf(!hasChromium)('share links in the console', () => {
  test('create a link for two devices, copy its short link, read its QR code, open it, revoke it', async () => {
    const { context, page, watch } = await newContext({ width: 1280, height: 800 }, { clipboard: true })
    await signIn(page)
    expect(await page.title()).toBe('Share links · Fleet tracker')
    await page.getByText('You have no active share link.').waitFor()

    // --- choose two trucks by searching; the chips name them
    await page.locator('#share-search').fill('truck')
    await page.waitForFunction(() => document.querySelectorAll('.share-pick').length === 2)
    await page.locator(`.share-pick[data-device="${ids.truck1}"] input`).check()
    await page.locator(`.share-pick[data-device="${ids.truck2}"] input`).check()
    expect(await page.locator('.share-chosen-count').textContent()).toBe('2 devices chosen')
    expect(await page.locator('.share-chips li span').allTextContents()).toEqual(['Truck 1', 'Truck 2'])
    // an expiry of one day; no events
    expect(await page.getByLabel('1 day').isChecked()).toBe(true)
    await page.getByRole('checkbox', { name: /^Events/ }).uncheck()
    await shot(page, 'share-form-desktop')

    await page.getByRole('button', { name: 'Create link' }).click()
    await page.getByRole('heading', { name: 'Link created' }).waitFor()
    const shortUrl = await page.locator('.share-created .share-url').inputValue()
    expect(shortUrl).toMatch(new RegExp(`^${base.replace(/\./g, '\\.')}/s/[A-Za-z0-9_-]+$`))
    expect(await page.locator('.share-created-devices').textContent()).toBe('Truck 1, Truck 2Expires in 24 h')
    // the form starts afresh
    expect(await page.locator('.share-chosen-count').textContent()).toBe('No device chosen')

    // --- its QR code is the short link
    expect(await page.locator('.share-created svg[role="img"]').getAttribute('aria-label')).toBe(`QR code of ${shortUrl}`)
    expect(await readQr(page, '.share-created .share-qr svg')).toBe(shortUrl)

    // --- Copy puts it on the clipboard
    await page.locator('.share-created').getByRole('button', { name: 'Copy' }).click()
    await page.locator('.share-created .share-copy-status').getByText('Copied to the clipboard.').waitFor()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(shortUrl)

    // --- the list has it: devices by alias, its expiry, no view yet, its permissions
    const row = page.locator('.share-link').first()
    await row.waitFor()
    const linkId = (await row.getAttribute('data-link'))!
    expect(await row.getAttribute('data-state')).toBe('active')
    expect(await row.locator('.share-link-devices').textContent()).toBe('Truck 1, Truck 2')
    expect(await row.locator('.share-badge').textContent()).toBe('Active')
    expect(await row.locator('.share-expiry').textContent()).toBe('Expires in 24 h')
    expect(await row.locator('.share-views').textContent()).toBe('0 views')
    expect(await row.locator('.share-last').textContent()).toBe('Never opened')
    expect(await row.locator('.share-perms').textContent()).toBe('Location, History')
    const created = await page.evaluate(async (id) => (await fetch(`devices/share/${id}`)).json(), linkId)
    expect(created.acl).toEqual([PERMISSION.location, PERMISSION.history])
    expect(created.devices).toEqual([ids.truck1, ids.truck2])
    expect(Math.abs(Date.parse(created.expires_at) / 1000 - Date.now() / 1000 - DAY_S)).toBeLessThan(120)
    await shot(page, 'share-created-desktop')

    // --- the short link, opened as a stranger would: the shared map with the two trucks
    const stranger = await context.newPage()
    await stranger.goto(shortUrl)
    expect(new URL(stranger.url()).pathname).toBe('/share')
    await stranger.waitForFunction(() => document.querySelectorAll('#devices .device').length === 2)
    expect(await stranger.locator('#devices .alias').allTextContents()).toEqual(['Truck 1', 'Truck 2'])
    await stranger.locator('#status.live').waitFor()

    // --- counted: a view, opened just now
    await page.getByRole('button', { name: 'Refresh' }).click()
    await page.waitForFunction((id) => document.querySelector(`.share-link[data-link="${id}"] .share-views`)?.textContent === '1 view', linkId)
    expect(await linkRow(page, linkId).locator('.share-last').textContent()).toBe('Last opened just now')

    // --- a link in the list shows its short link and QR code too
    await linkRow(page, linkId).getByRole('button', { name: 'Show link' }).click()
    await linkRow(page, linkId).locator('.share-url').waitFor()
    expect(await linkRow(page, linkId).locator('.share-url').inputValue()).toBe(shortUrl)
    expect(await readQr(page, `.share-link[data-link="${linkId}"] .share-qr svg`)).toBe(shortUrl)
    await linkRow(page, linkId).getByRole('button', { name: 'Hide link' }).click()

    // --- revoke, after a confirmation (Cancel first: nothing happens)
    await linkRow(page, linkId).getByRole('button', { name: 'Revoke' }).click()
    const dialog = page.getByRole('dialog', { name: 'Revoke this link?' })
    await dialog.waitFor()
    expect(await dialog.textContent()).toContain('It shares Truck 1, Truck 2.')
    await page.waitForFunction((expected) => document.activeElement?.textContent === expected, 'Cancel', { timeout: 5000 })
    await shot(page, 'share-revoke-desktop')
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'hidden' })
    await page.waitForFunction((expected) => document.activeElement?.textContent === expected, 'Revoke', { timeout: 5000 })
    expect(await linkRow(page, linkId).getAttribute('data-state')).toBe('active')
    await linkRow(page, linkId).getByRole('button', { name: 'Revoke' }).click()
    await dialog.getByRole('button', { name: 'Revoke link' }).click()
    await dialog.waitFor({ state: 'hidden' })
    await page.waitForFunction((id) => document.querySelector(`.share-link[data-link="${id}"]`)?.getAttribute('data-state') === 'revoked', linkId)
    expect(await linkRow(page, linkId).locator('.share-badge').textContent()).toBe('Revoked')
    expect(await linkRow(page, linkId).getByRole('button').count()).toBe(0)
    // the keyboard's place: the revoked link's row, not the top of the page
    await page.waitForFunction((id) => document.activeElement?.id === `share-link-${id}`, linkId)
    // the card of the new link goes: it no longer opens
    expect(await page.locator('.share-created').count()).toBe(0)
    await shot(page, 'share-revoked-desktop')

    // the stranger's open page ends; the short link now shows the ended page
    await stranger.locator('#ended').waitFor({ state: 'visible', timeout: 10_000 })
    const late = await context.newPage()
    const ended = await late.goto(shortUrl)
    expect(ended!.status()).toBe(410)
    await late.getByRole('heading', { name: 'This shared link has ended' }).waitFor()

    // --- the changes carried this console's Origin (the browser adds it); without it the cookie is refused
    expect(watch.changes).toEqual([
      { method: 'POST', path: '/devices/share', origin: base },
      { method: 'DELETE', path: `/devices/share/${linkId}`, origin: base },
    ])
    const cookie = (await context.cookies(base)).map((c) => `${c.name}=${c.value}`).join('; ')
    const forged = await fetch(`${base}/devices/share`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify({ devices: [ids.truck1], ttl: 3600 }),
    })
    expect(forged.status).toBe(403)

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 90_000)

  test('on a phone without the Clipboard API: a custom expiry, Copy selects the link, a change of expiry', async () => {
    const { context, page, watch } = await newContext({ width: 390, height: 844 }, { clipboard: false })
    await signIn(page)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)

    await page.locator('#share-search').fill('van')
    await page.waitForFunction(() => document.querySelectorAll('.share-pick').length === 1)
    await page.locator(`.share-pick[data-device="${ids.van1}"] input`).check()
    await page.getByLabel('Custom').check()
    await page.getByLabel('Amount').fill('0')
    await page.getByRole('button', { name: 'Create link' }).click()
    await page.getByRole('alert').getByText('Enter an expiry from 1 minute to 365 days.').waitFor()
    await page.getByLabel('Amount').fill('3')
    await page.getByLabel('Unit').selectOption('hours')
    expect(await page.getByRole('alert').count()).toBe(0)
    await shot(page, 'share-form-phone')
    await page.getByRole('button', { name: 'Create link' }).click()
    await page.getByRole('heading', { name: 'Link created' }).waitFor()
    const shortUrl = await page.locator('.share-created .share-url').inputValue()
    expect(await readQr(page, '.share-created .share-qr svg')).toBe(shortUrl)

    // Copy without the Clipboard API: the link is selected (and copied by the old command where it works)
    await page.locator('.share-created').getByRole('button', { name: 'Copy' }).click()
    await page.waitForFunction(() => document.querySelector('.share-created .share-copy-status')?.textContent !== '')
    expect(await page.locator('.share-created .share-copy-status').textContent()).toMatch(/^(Copied to the clipboard\.|The link is selected: press Ctrl\+C)/)
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement).value.slice((document.activeElement as HTMLInputElement).selectionStart!, (document.activeElement as HTMLInputElement).selectionEnd!))).toBe(shortUrl)
    await page.locator('.share-created').scrollIntoViewIfNeeded()
    await shot(page, 'share-created-phone')

    // three hours, then a week from now
    const row = page.locator('.share-link').first()
    await row.locator('.share-expiry').getByText('Expires in 3 h').waitFor()
    const linkId = (await row.getAttribute('data-link'))!
    await row.getByRole('button', { name: 'Change expiry' }).click()
    await row.getByLabel('Expires in').selectOption({ label: '1 week' })
    await row.getByRole('button', { name: 'Save' }).click()
    await linkRow(page, linkId).locator('.share-expiry').getByText('Expires in 7 d').waitFor()
    expect(await page.locator('.share-created .share-expiry').textContent()).toBe('Expires in 7 d')
    expect(watch.changes.map((c) => [c.method, c.origin])).toEqual([
      ['POST', base],
      ['PATCH', base],
    ])
    await linkRow(page, linkId).scrollIntoViewIfNeeded()
    await shot(page, 'share-list-phone')
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 90_000)
})
