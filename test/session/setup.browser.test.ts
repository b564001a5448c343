/**
 * The first-run setup page in a real browser: Debian's chromium driven by playwright-core,
 * against a real server on 127.0.0.1 with an empty database. A person fills the form (after a
 * first try the page refuses), lands signed in, and the spent link says so. Screenshots at
 * desktop and phone size go to test-output/session/ for a person to look at.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { type Browser, type BrowserContextOptions, type Page } from 'playwright-core'
import { createApp } from '../../src/app'
import { systemClock } from '../../src/clock'
import { loadConfig } from '../../src/config'
import { createFirstRun } from '../../src/session/setup'
import { chromiumPresent, launchChromium, watchedPage } from '../console/support'
import { freePort } from '../support/process'
import { type EngineWorld, openWorld } from '../support/world'

const hasChromium = chromiumPresent('the setup page browser test')

// git-ignored, beside the console's screenshots
const SCREENSHOTS = join(import.meta.dir, '..', '..', 'test-output', 'session')
const TOKEN = 'browser-setup-token-0123456789abcdef'
const DESKTOP = { width: 1280, height: 800 }
const PHONE = { width: 390, height: 844 }

let world: EngineWorld
let app: ReturnType<typeof createApp>
let browser: Browser
let base: string

beforeAll(async () => {
  if (!hasChromium) return
  mkdirSync(SCREENSHOTS, { recursive: true })
  world = await openWorld({})
  const port = freePort()
  base = `http://127.0.0.1:${port}`
  // the server's stores, on the system's clock as a server's are
  const stores = world.storesBeside(systemClock)
  app = createApp({
    stores,
    clock: systemClock,
    config: loadConfig({ APP_URL: base }),
    firstRun: createFirstRun(stores.people, TOKEN),
  })
  app.listen({ port, hostname: '127.0.0.1' })
  browser = await launchChromium()
}, 30_000)

afterAll(async () => {
  await browser?.close()
  await app?.stop(true)
  await world?.close()
})

// the page's own refusals (400) show in the console as failed loads: not errors of the page
const newContext = (contextOptions: BrowserContextOptions) => watchedPage(browser, base, contextOptions, { expectedConsoleErrors: /Failed to load resource/ })

const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true })

describe.skipIf(!hasChromium)('the setup page in chromium', () => {
  test('refuses a bad form in words next to the fields, then creates the account and signs the person in', async () => {
    const link = `${base}/setup?token=${TOKEN}`
    const { context: desktopContext, page: desktop, watch: { errors } } = await newContext({ viewport: DESKTOP })
    const response = await desktop.goto(link)
    expect(response!.status()).toBe(200)
    expect(await desktop.title()).toBe('Set up the fleet tracker')
    // labelled fields, found as a screen reader would
    for (const label of ['Account name', 'Your sign-in name', 'Password', 'Repeat the password']) {
      expect(await desktop.getByLabel(label, { exact: true }).count()).toBe(1)
    }
    await shot(desktop, 'setup-desktop')

    // empty: each field says what it needs, and the first one has the focus
    await desktop.getByRole('button', { name: 'Create the account and sign in' }).click()
    await desktop.locator('#account-error').waitFor()
    expect(await desktop.locator('#account-error').textContent()).toBe('Enter a name for the account.')
    expect(await desktop.locator('#password-error').textContent()).toBe('The password needs at least 10 characters.')
    expect(await desktop.getByLabel('Account name').getAttribute('aria-invalid')).toBe('true')
    expect(await desktop.evaluate(() => document.activeElement?.id)).toBe('account')

    // two passwords that differ
    await desktop.getByLabel('Account name').fill('Acme Logistics')
    await desktop.getByLabel('Your sign-in name').fill('dana')
    await desktop.getByLabel('Password', { exact: true }).fill('correct horse battery')
    await desktop.getByLabel('Repeat the password').fill('correct horse batteries')
    await desktop.getByRole('button', { name: 'Create the account and sign in' }).click()
    await desktop.locator('#confirm-error').waitFor()
    expect(await desktop.locator('#confirm-error').textContent()).toBe('The two passwords differ.')
    await shot(desktop, 'setup-desktop-errors')
    await desktopContext.close()

    // on a phone: filled and sent, the person lands signed in
    const { context, page: phone, watch: { errors: phoneErrors } } = await newContext({ viewport: PHONE, deviceScaleFactor: 2, isMobile: true, hasTouch: true })
    await phone.goto(link)
    // nothing wider than the screen
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width)
    await shot(phone, 'setup-phone')
    await phone.getByLabel('Account name').fill('Acme Logistics')
    await phone.getByLabel('Your sign-in name').fill('Dana')
    await phone.getByLabel('Password', { exact: true }).fill('correct horse battery')
    await phone.getByLabel('Repeat the password').fill('correct horse battery')
    await phone.getByRole('button', { name: 'Create the account and sign in' }).click()
    await phone.locator('#done').waitFor({ state: 'visible' })
    expect(await phone.locator('h1').textContent()).toBe('You’re signed in')
    expect(await phone.locator('#whoami').textContent()).toBe('Signed in as Dana, administrator of Acme Logistics.')
    expect(await phone.locator('#setup').isHidden()).toBe(true)
    expect(await phone.evaluate(() => document.activeElement?.id)).toBe('done')
    // the spent link is out of the address bar
    expect(phone.url()).toBe(`${base}/setup`)
    const [cookie] = await context.cookies()
    expect(cookie).toMatchObject({ name: 'tracker_session', httpOnly: true, sameSite: 'Strict', path: '/' })
    await shot(phone, 'setup-phone-done')

    // signed in for the API too: the browser's cookie is the session
    const me = await phone.evaluate(async () => (await fetch('session')).json())
    expect(me.user).toMatchObject({ name: 'Dana', role: 'admin' })

    // the link again: spent
    const again = await phone.goto(link)
    expect(again!.status()).toBe(403)
    expect(await phone.locator('h1').textContent()).toBe('This setup link has been used')
    await shot(phone, 'setup-phone-used')

    expect([...errors, ...phoneErrors]).toEqual([])
    await context.close()
    console.log(`setup page screenshots: ${SCREENSHOTS}`)
  }, 60_000)
})
