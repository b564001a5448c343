/**
 * The console opened at the server's own address while APP_URL is not set (#20): the first run's
 * setup link from the log, setup, sign out, sign in again and a write (a group added), in Debian's
 * chromium against the real server in a child process. Before, the default APP_URL
 * (http://localhost:PORT) made every sign-in after setup a 403 "try again later". Then the sign-in
 * page on a 403 shows the server's reason. Screenshots at 1280×800 and 390×844 in test-output/.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import { chromiumPresent, launchChromium, openAccountMenu, OUTPUT, shot, watchedPage } from '../console/support'
import { freePort, serverEnv, spawnServer, type ServerProcess } from '../support/process'
import { serverDatabase, type ServerDatabase } from '../support/server-database'

const hasChromium = chromiumPresent('the sign-in origin browser test')
const ROOT = join(import.meta.dir, '..', '..')
const PASSWORD = 'first day passphrase'
const DESKTOP = { viewport: { width: 1280, height: 800 } }
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true }

let database: ServerDatabase | undefined
let server: ServerProcess
let browser: Browser
let base: string
let setupLink: string

beforeAll(async () => {
  if (!hasChromium) return
  mkdirSync(OUTPUT, { recursive: true })
  database = await serverDatabase('origin-browser')
  const port = freePort()
  base = `http://127.0.0.1:${port}`
  const env = { ...serverEnv(database, { http: port, osmand: 0, teltonika: 0 }, 'info'), APP_URL: undefined, TILE_URL: 'http://tiles.test/{z}/{x}/{y}.png' }
  server = spawnServer([process.execPath, '--max-http-header-size=65536', 'src/main.ts', 'serve'], { cwd: ROOT, env })
  setupLink = String((await server.waitFor((line) => typeof line.setup_url === 'string', 20_000)).setup_url)
  await server.waitFor((line) => line.msg === 'serving', 20_000)
  browser = await launchChromium()
}, 30_000)

afterAll(async () => {
  await browser?.close()
  if (server?.child.exitCode === null) await server.terminate()
  await database?.close()
})

/** sends the request as a page on another origin would, and hands the browser the server's real answer */
async function fromElsewhere(route: import('playwright-core').Route): Promise<void> {
  const response = await route.fetch({ headers: { ...route.request().headers(), origin: 'https://fleet.example.org' } })
  await route.fulfill({ response })
}

async function signInOnForm(page: import('playwright-core').Page, name: string): Promise<void> {
  await page.locator('#signin-name').fill(name)
  await page.locator('#signin-password').fill(PASSWORD)
  await page.keyboard.press('Enter')
}

describe.skipIf(!hasChromium)('the console at the address it was opened at, APP_URL unset', () => {
  test('setup from the logged link, sign out, sign in again, add a group; desktop and phone', async () => {
    // the link names the address the server listens on, not APP_URL's default localhost
    expect(setupLink.startsWith(`${base}/setup?token=`)).toBe(true)
    // a new account has no device yet: GET /devices is 404 (the contract's "No devices found")
    const { context, page, watch } = await watchedPage(browser, base, DESKTOP, { expectedConsoleErrors: /status of 404/ })
    await page.goto(setupLink)
    await page.getByLabel('Account name').fill('Pi Fleet')
    await page.getByLabel('Your sign-in name').fill('owner')
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
    await page.getByLabel('Repeat the password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Create the account and sign in' }).click()
    await page.locator('#done').waitFor({ state: 'visible' })

    await page.goto(`${base}/`)
    await page.locator('.who').waitFor({ state: 'attached' })
    await openAccountMenu(page)
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByText('You have signed out.').waitFor()

    // the sign-in that was a 403 before
    await signInOnForm(page, 'owner')
    await page.locator('.who').waitFor({ state: 'attached' })
    expect(await page.locator('.signin-error, [role="alert"]').filter({ hasText: 'Signing in failed' }).count()).toBe(0)

    // a write with the cookie
    await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Administration' }).click()
    await page.getByRole('navigation', { name: 'Administration sections' }).getByRole('link', { name: 'Groups', exact: true }).click()
    await page.getByRole('button', { name: 'Add a group' }).click()
    await page.locator('#group-name').fill('Vans')
    await page.locator('#group-name').press('Enter')
    await page.getByText('Vans was added.').waitFor()
    // the note comes with the answer; the list is read again after it
    await page.locator('.admin-table tbody .cell-name').getByText('Vans', { exact: true }).waitFor()
    expect(await page.locator('.admin-table tbody .cell-name').allTextContents()).toContain('Vans')
    await shot(page, 'origin-signed-in-desktop')

    const phone = await context.browser()!.newContext({ ...PHONE, deviceScaleFactor: 1 })
    const phonePage = await phone.newPage()
    await phonePage.goto(`${base}/`)
    await signInOnForm(phonePage, 'owner')
    await phonePage.locator('.who').waitFor({ state: 'attached' })
    await phonePage.goto(`${base}/#/admin/groups`)
    await phonePage.locator('.admin-table tbody .cell-name', { hasText: 'Vans' }).waitFor()
    await shot(phonePage, 'origin-signed-in-phone')
    await phone.close()

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 60_000)

  test('a sign-in refused for its origin shows the server\'s reason, not "try again later"', async () => {
    // as a page from another origin would arrive (a proxy that rewrote the address, a page elsewhere)
    const { context, page } = await watchedPage(browser, base, DESKTOP, { expectedConsoleErrors: /status of 403/ })
    await context.route(`${base}/session`, (route) =>
      route.request().method() === 'POST' ? fromElsewhere(route) : route.continue(),
    )
    await page.goto(`${base}/`)
    await signInOnForm(page, 'owner')
    const reason = page.getByText(`open the console at ${base}`)
    await reason.waitFor()
    expect(await reason.textContent()).not.toContain('Try again later')
    expect(await page.getByText('Try again later').count()).toBe(0)
    await shot(page, 'origin-signin-refused-desktop')
    await context.close()

    const phone = await watchedPage(browser, base, PHONE, { expectedConsoleErrors: /status of 403/ })
    await phone.context.route(`${base}/session`, (route) =>
      route.request().method() === 'POST' ? fromElsewhere(route) : route.continue(),
    )
    await phone.page.goto(`${base}/`)
    await signInOnForm(phone.page, 'owner')
    await phone.page.getByText(`open the console at ${base}`).waitFor()
    await shot(phone.page, 'origin-signin-refused-phone')
    await phone.context.close()
  }, 60_000)
})
