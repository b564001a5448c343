/**
 * The console's Administration view in a real browser (Debian's chromium, playwright-core)
 * against the real server in a child process. Dana, Acme's admin, adds a device (and sees it on
 * the live map), a user with a password (who then signs in elsewhere), creates a key (its secret
 * shown once, and working) and revokes it, edits a group, is refused what the API refuses (an
 * identifier in use, the last admin, a model in use) with the API's words beside the field, and
 * reads all of it in the audit log. Alice, a member, has no Administration. No page error; no
 * request leaves the host but tiles. Screenshots of each section at desktop (1280×800) and phone
 * (390×844) size go to test-output/.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type Browser, type Locator, type Page } from 'playwright-core'
import { chromiumPresent, launchChromium, PLAIN_TILE, shot, signIn, startConsoleServer, watchedPage, type ConsoleServer } from './support'
import { baseDataset, ids, keys } from '../support/world'

const hasChromium = chromiumPresent('the administration browser test')

const TRUCK1_IMEI = '359710049095001'
const DESKTOP = { width: 1280, height: 800 }
const PHONE = { width: 390, height: 844 }

let server: ConsoleServer
let base: string
let browser: Browser

beforeAll(async () => {
  if (!hasChromium) return
  server = await startConsoleServer({ name: 'admin-browser', dataset: baseDataset(), signIn: [ids.alice, ids.dana], ports: { osmand: true } })
  base = server.base
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

// the browser notes every refusal it gets: who is signed in before signing in (401), and the conflicts provoked on purpose (409)
const newContext = (viewport: { width: number; height: number }) => watchedPage(browser, base, { viewport }, { tile: PLAIN_TILE, expectedConsoleErrors: /status of 409/ })

const api = (path: string, key = keys.dana, init: RequestInit = {}) => fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${key}`, ...init.headers } })
const section = (page: Page, name: string) => page.getByRole('navigation', { name: 'Administration sections' }).getByRole('link', { name, exact: true })
/** waits until the element's whole text is this (lists fill in as their requests answer) */
const hasText = (locator: Locator, text: string) => locator.filter({ hasText: new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }).waitFor()
const row = (page: Page, name: string) => page.locator('.admin-table tbody tr').filter({ has: page.locator('.cell-name', { hasText: new RegExp(`^${name}`) }) })

describe.skipIf(!hasChromium)('Administration in chromium', () => {
  test('an admin adds a device and a user, creates and revokes a key, edits a group, and reads it all in the audit log', async () => {
    const { context, page, watch } = await newContext(DESKTOP)
    await signIn(page, base, 'dana')
    const nav = page.getByRole('navigation', { name: 'Views' })
    expect(await nav.getByRole('link').allTextContents()).toContain('Administration')
    await nav.getByRole('link', { name: 'Administration' }).click()
    await page.getByRole('heading', { name: 'Devices', level: 2 }).waitFor()
    expect(await section(page, 'Devices').getAttribute('aria-current')).toBe('page')
    // the account's devices (the unlinked one is in no list)
    await page.waitForFunction(() => document.querySelectorAll('.admin-table tbody tr').length === 3)
    expect(await page.locator('.admin-table tbody .cell-name').allTextContents()).toEqual(['Truck 1', 'Truck 2', 'Van 1'])
    await hasText(row(page, 'Truck 2').locator('td').nth(2), 'Trucks, Vans')

    // --- add a device, by keyboard where it matters: the dialog takes the focus, Escape gives it back
    const add = page.getByRole('button', { name: 'Add a device' })
    await add.click()
    const dialog = page.getByRole('dialog', { name: 'Add a device' })
    await dialog.waitFor()
    await page.waitForFunction((expected) => document.activeElement?.id === expected, 'device-alias', { timeout: 5000 })
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'detached' })
    await page.waitForFunction((label) => document.activeElement?.textContent === label, 'Add a device', { timeout: 5000 })
    await page.keyboard.press('Enter')
    await dialog.waitFor()
    // nothing filled: the form says what is missing, beside each field
    await page.keyboard.press('Enter')
    await dialog.getByText('Some fields need a change').waitFor()
    expect(await page.locator('#device-alias-error').textContent()).toContain('Enter a name.')
    // the model is optional: the protocol it first reports on chooses it
    expect(await page.locator('#device-model-error').count()).toBe(0)
    expect(await page.locator('#device-imei-error').textContent()).toContain('Enter an IMEI or a serial')
    expect(await page.locator('#device-alias').getAttribute('aria-invalid')).toBe('true')
    await page.waitForFunction((expected) => document.activeElement?.id === expected, 'device-alias', { timeout: 5000 })
    await page.keyboard.type('Truck 9')
    await page.locator('#device-model').selectOption({ label: 'GT06N (gt06)' })
    // Truck 1's IMEI: the API's 409, beside the IMEI
    await page.locator('#device-imei').fill(TRUCK1_IMEI)
    await dialog.getByRole('checkbox', { name: 'Trucks' }).check()
    await shot(page, 'admin-device-form-desktop')
    await dialog.getByRole('button', { name: 'Add a device' }).click()
    await page.locator('#device-imei-error').getByText(`${TRUCK1_IMEI} is already the IMEI or serial of another device on this server`).waitFor()
    expect(await page.locator('#device-alias-error').count()).toBe(0)
    await shot(page, 'admin-device-conflict-desktop')
    await page.locator('#device-imei').fill('359710049095999')
    await dialog.getByRole('button', { name: 'Add a device' }).click()
    await dialog.waitFor({ state: 'detached' })
    await page.getByRole('status').getByText('Truck 9 was added.').waitFor()
    await row(page, 'Truck 9').waitFor()
    await hasText(row(page, 'Truck 9').locator('td').nth(2), 'Trucks')
    const truck9 = (await row(page, 'Truck 9').getAttribute('data-id'))!
    const stored = await (await api(`/devices/${truck9}`)).json()
    expect(stored).toMatchObject({ alias: 'Truck 9', imei: '359710049095999', model: ids.gt06, state: 'new' })
    await shot(page, 'admin-devices-desktop')

    // --- a user with a password; the last admin cannot be deleted (the API's 409, in the dialog)
    await section(page, 'Users').click()
    await row(page, 'dana').waitFor()
    expect(await row(page, 'dana').locator('.badge').textContent()).toBe('you')
    await page.getByRole('button', { name: 'Delete dana' }).click()
    const confirm = page.getByRole('dialog', { name: 'Delete dana?' })
    await confirm.getByRole('button', { name: 'Delete the user' }).click()
    await confirm.getByRole('alert').getByText("dana is the account's last admin").waitFor()
    await confirm.getByRole('button', { name: 'Cancel' }).click()
    await page.getByRole('button', { name: 'Add a user' }).click()
    const userDialog = page.getByRole('dialog', { name: 'Add a user' })
    await page.locator('#user-name').fill('frank')
    await page.locator('#user-password').fill('too short')
    await userDialog.getByRole('checkbox', { name: /^Vans/ }).check()
    await userDialog.getByRole('button', { name: 'Add a user' }).click()
    expect(await page.locator('#user-password-error').textContent()).toContain('at least 10 characters')
    await page.locator('#user-password').fill('frank has a long password')
    await userDialog.getByRole('button', { name: 'Add a user' }).click()
    await userDialog.waitFor({ state: 'detached' })
    await row(page, 'frank').waitFor()
    await hasText(row(page, 'frank').locator('td').nth(0), 'Member')
    await hasText(row(page, 'frank').locator('td').nth(1), 'Vans')
    await shot(page, 'admin-users-desktop')
    // frank signs in elsewhere and sees the devices of Vans
    {
      const other = await newContext(DESKTOP)
      await signIn(other.page, base, 'frank', { password: 'frank has a long password' })
      await other.page.waitForFunction(() => document.querySelectorAll('.device-row').length === 2)
      expect(await other.page.locator('.device-row .alias').allTextContents()).toEqual(['Truck 2', 'Van 1'])
      expect(await other.page.getByRole('navigation', { name: 'Views' }).getByRole('link').allTextContents()).not.toContain('Administration')
      expect(other.watch.errors).toEqual([])
      expect(other.watch.leaks).toEqual([])
      await other.context.close()
    }

    // --- a key: its secret shown once, working; then revoked, and refused
    await section(page, 'API keys').click()
    await page.locator('.admin-table, .empty-note').first().waitFor()
    await page.getByRole('button', { name: 'Create a key' }).click()
    const keyDialog = page.getByRole('dialog', { name: 'Create a key for dana' })
    await page.locator('#key-name').fill('dispatch import')
    await keyDialog.getByRole('button', { name: 'Create a key' }).click()
    const secretDialog = page.getByRole('dialog', { name: 'Key “dispatch import” created' })
    await secretDialog.waitFor()
    await secretDialog.getByText('It is shown only this once').waitFor()
    const secret = await page.locator('#key-secret').inputValue()
    expect(secret.length).toBeGreaterThanOrEqual(16)
    await secretDialog.getByRole('button', { name: 'Copy' }).click()
    await secretDialog.getByText(/Copied to the clipboard|Copying failed/).waitFor()
    await shot(page, 'admin-key-secret-desktop')
    expect((await api('/me', secret)).status).toBe(200)
    await secretDialog.getByRole('button', { name: 'I have copied it' }).click()
    await row(page, 'dispatch import').waitFor()
    expect(await page.content()).not.toContain(secret)
    await shot(page, 'admin-keys-desktop')
    await page.getByRole('button', { name: 'Revoke dispatch import' }).click()
    await page.getByRole('dialog', { name: 'Revoke the key “dispatch import”?' }).getByRole('button', { name: 'Revoke' }).click()
    await row(page, 'dispatch import').waitFor({ state: 'detached' })
    expect((await api('/me', secret)).status).toBe(401)

    // --- a group: renamed, frank added; its unlinked device (in no list) stays
    await section(page, 'Groups').click()
    await page.getByRole('button', { name: 'Edit Trucks' }).click()
    const groupDialog = page.getByRole('dialog', { name: 'Edit Trucks' })
    await page.locator('#group-name').fill('Heavy trucks')
    await groupDialog.getByRole('checkbox', { name: /^frank/ }).check()
    await groupDialog.getByRole('checkbox', { name: /^Truck 2/ }).uncheck()
    await shot(page, 'admin-group-form-desktop')
    await groupDialog.getByRole('button', { name: 'Save changes' }).click()
    await groupDialog.waitFor({ state: 'detached' })
    await row(page, 'Heavy trucks').waitFor()
    await hasText(row(page, 'Heavy trucks').locator('td').nth(0), 'alice, frank')
    const group = await (await api(`/groups/${ids.trucks}`)).json()
    expect(group.name).toBe('Heavy trucks')
    expect(group.devices.sort()).toEqual([ids.truck1, truck9, ids.unlinked].sort())
    await shot(page, 'admin-groups-desktop')

    // --- models: one of the account's with a form command; a server-wide one is read-only
    await section(page, 'Models').click()
    await row(page, 'GT06N').waitFor()
    await page.getByRole('button', { name: 'Add a model' }).click()
    const modelDialog = page.getByRole('dialog', { name: 'Add a model' })
    await page.locator('#model-name').fill('TK103')
    await page.locator('#model-protocol').selectOption('gt06')
    await modelDialog.getByRole('button', { name: 'Add a command' }).click()
    await modelDialog.getByLabel(/^Command name/).fill('Set interval')
    await modelDialog.getByLabel('Shown as').selectOption('form')
    await modelDialog.getByRole('button', { name: 'Add a field' }).click()
    await modelDialog.getByLabel(/^Field name/).fill('2seconds')
    await modelDialog.getByRole('button', { name: 'Add a model' }).click()
    await modelDialog.getByText('Letters, digits and _, not starting with a digit.').waitFor()
    await modelDialog.getByLabel(/^Field name/).fill('seconds')
    await modelDialog.getByLabel('Type', { exact: true }).selectOption('number')
    await modelDialog.getByLabel('Label', { exact: true }).fill('Interval (s)')
    await shot(page, 'admin-model-form-desktop')
    await modelDialog.getByRole('button', { name: 'Add a model' }).click()
    await modelDialog.waitFor({ state: 'detached' })
    await row(page, 'TK103').waitFor()
    const models = (await (await api('/models')).json()) as { name: string; protocol: string; commands: { name: string; widget: unknown }[] }[]
    expect(models.find((m) => m.name === 'TK103')).toMatchObject({
      protocol: 'gt06',
      commands: [{ name: 'Set interval', widget: { type: 'form', fields: [{ name: 'seconds', type: 'number', label: 'Interval (s)', required: true }] } }],
    })
    // the imported GT06N is server-wide: the operator's, neither edited nor deleted here
    await row(page, 'GT06N').getByText('Server-wide, read-only').waitFor()
    expect(await row(page, 'GT06N').getByRole('button').count()).toBe(0)
    await row(page, 'TK103').getByText('Your account’s').waitFor()
    await row(page, 'TK103').getByRole('button', { name: 'Delete TK103' }).waitFor()
    await shot(page, 'admin-models-desktop')

    // --- the audit log: newest first, who and what, in words
    await section(page, 'Audit log').click()
    await page.locator('.audit-table tbody tr').first().waitFor()
    const entries = await page.locator('.audit-table tbody tr').evaluateAll((rows) =>
      rows.map((r) => Array.from(r.querySelectorAll('td')).slice(1).map((td) => td.textContent)),
    )
    expect(entries).toEqual([
      ['dana (you)', 'Created model TK103'],
      ['dana (you)', 'Changed group Heavy trucks'],
      ['dana (you)', expect.stringMatching(/^Deleted API key [0-9a-f]{8}…$/)],
      ['dana (you)', expect.stringMatching(/^Created API key [0-9a-f]{8}…$/)],
      ['dana (you)', 'Created user frank'],
      ['dana (you)', 'Created device Truck 9'],
    ])
    await shot(page, 'admin-audit-desktop')

    // --- the live map lists the new device
    await nav.getByRole('link', { name: 'Live map' }).click()
    await page.waitForFunction(() => Array.from(document.querySelectorAll('.device-row .alias')).some((e) => e.textContent === 'Truck 9'))

    // --- each section at phone size, and a dialog
    await section(page, 'Devices').waitFor({ state: 'detached' })
    await nav.getByRole('link', { name: 'Administration' }).click()
    await page.setViewportSize(PHONE)
    for (const [tab, name] of [
      ['devices', 'Devices'],
      ['users', 'Users'],
      ['groups', 'Groups'],
      ['keys', 'API keys'],
      ['models', 'Models'],
      ['audit', 'Audit log'],
    ]) {
      await section(page, name).click()
      await page.waitForFunction((t) => location.hash === `#/admin/${t}`, tab)
      await page.getByRole('heading', { name, level: 2 }).waitFor()
      await page.locator('.admin-table tbody tr, .empty-note').first().waitFor()
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width)
      await shot(page, `admin-${tab}-phone`)
    }
    await section(page, 'Users').click()
    await page.getByRole('button', { name: 'Edit frank' }).click()
    await page.getByRole('dialog', { name: 'Edit frank' }).waitFor()
    await shot(page, 'admin-user-form-phone')
    await page.keyboard.press('Escape')
    await section(page, 'Models').click()
    // a field's pattern (set over the API: this form does not show it) outlives an edit here
    const tk103 = ((await (await api('/models')).json()) as { id: string; name: string; commands: { name: string; widget: { fields: Record<string, unknown>[] } }[] }[]).find((m) => m.name === 'TK103')!
    const patterned = tk103.commands.map((c) => ({ ...c, widget: { ...c.widget, fields: c.widget.fields.map((f) => ({ ...f, pattern: '[1-9][0-9]{0,4}' })) } }))
    expect((await api(`/models/${tk103.id}`, keys.dana, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ commands: patterned }) })).status).toBe(200)
    await page.reload()
    await row(page, 'TK103').waitFor()
    await page.getByRole('button', { name: 'Edit TK103' }).click()
    const editDialog = page.getByRole('dialog', { name: 'Edit TK103' })
    await editDialog.getByLabel(/^Command name/).first().waitFor()
    await shot(page, 'admin-model-form-phone')
    await editDialog.getByLabel('Label', { exact: true }).fill('Seconds')
    await editDialog.getByRole('button', { name: 'Save changes' }).click()
    await editDialog.waitFor({ state: 'detached' })
    const saved = (await (await api(`/models/${tk103.id}`)).json()) as { commands: { widget: { fields: Record<string, unknown>[] } }[] }
    expect(saved.commands[0]!.widget.fields).toEqual([{ name: 'seconds', type: 'number', label: 'Seconds', pattern: '[1-9][0-9]{0,4}', required: true }])

    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 120_000)

  test('a member has no Administration: not in the navigation, and its address says so', async () => {
    const { context, page, watch } = await newContext(PHONE)
    await signIn(page, base, 'alice')
    await page.getByRole('button', { name: 'Menu' }).click()
    expect(await page.getByRole('navigation', { name: 'Views' }).getByRole('link').allTextContents()).not.toContain('Administration')
    await page.goto(`${base}/#/admin/users`)
    await page.getByText('Administration is for the administrators of your account.').waitFor()
    expect(await page.locator('.admin-table').count()).toBe(0)
    await shot(page, 'admin-member-phone')
    expect(watch.errors).toEqual([])
    expect(watch.leaks).toEqual([])
    await context.close()
  }, 60_000)
})
