/**
 * A range over 31 days on the History view (issue 20 item 9): the API refuses ranges over 31
 * days, so the console says so beside the form, and the device the person chose stays chosen,
 * whichever order they pick the device and the days in. Debian's chromium against the real server.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { chromiumPresent, launchChromium, shot, signIn, startConsoleServer, watchedPage, type ConsoleServer } from './support'
import { baseDataset, ids } from '../support/world'

const hasChromium = chromiumPresent('the history range browser test')

const now = Math.floor(Date.now() / 1000)
const positions = [
  { device: ids.truck1, timestamp: now - 3600, latitude: 48.85, longitude: 2.3, speed: 42, course: 80 },
  { device: ids.truck1, timestamp: now - 3000, latitude: 48.86, longitude: 2.32, speed: 40, course: 80 },
]

let server: ConsoleServer
let browser: Browser

beforeAll(async () => {
  if (!hasChromium) return
  server = await startConsoleServer({ name: 'history-range-browser', dataset: { ...baseDataset(), positions }, signIn: [ids.alice] })
  browser = await launchChromium()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

/** the day `days` before today, as a date input writes it (UTC: the page runs in UTC) */
const dayBefore = (days: number) => new Date((now - days * 86_400) * 1000).toISOString().slice(0, 10)
const picked = (page: Page) => page.locator('#history-device').inputValue()
const TOO_LONG = /A range may cover at most 31 days; this one covers 41\./

/** Truck 2's history, then 51 days typed into the date fields and Enter: refused in words, Truck 2 still chosen */
async function typedRange(page: Page) {
  await page.goto(`${server.base}/#/history/${ids.truck2}`)
  await page.locator('.history-form').waitFor()
  const [y, m, d] = dayBefore(50).split('-')
  await page.locator('#history-from').click()
  await page.keyboard.press('Home')
  await page.keyboard.type(`${m}${d}${y}`)
  await page.locator('#history-to').click()
  await page.keyboard.type(`${dayBefore(0).slice(5, 7)}${dayBefore(0).slice(8, 10)}${dayBefore(0).slice(0, 4)}`)
  await page.keyboard.press('Enter')
  await page.getByRole('alert').filter({ hasText: /at most 31 days/ }).first().waitFor()
  expect(await picked(page)).toBe(ids.truck2)
}

describe.skipIf(!hasChromium)('History: a range over 31 days', () => {
  for (const viewport of [
    { width: 1280, height: 800, name: 'desktop' },
    { width: 390, height: 844, name: 'phone' },
  ]) {
    test(`${viewport.name}: the device stays chosen and the limit is told, whether the days or the device come first`, async () => {
      const { context, page, watch } = await watchedPage(browser, server.base, { viewport, timezoneId: 'UTC' })
      await signIn(page, server.base, 'alice')
      await page.locator('.live-status.live').waitFor()

      // --- the device first, then 41 days, then Show
      await page.goto(`${server.base}/#/history`)
      await page.locator('#history-device option', { hasText: 'Truck 1' }).waitFor({ state: 'attached' })
      await page.locator('#history-device').selectOption({ label: 'Truck 1' })
      await page.waitForFunction((id) => location.hash.startsWith(`#/history/${id}`), ids.truck1)
      await page.locator('#history-from').fill(dayBefore(40))
      await page.locator('#history-to').fill(dayBefore(0))
      await page.locator('.history-form button[type=submit]').click()
      await page.getByRole('alert').filter({ hasText: TOO_LONG }).first().waitFor()
      expect(await picked(page)).toBe(ids.truck1)
      expect(await page.locator('#history-from').inputValue()).toBe(dayBefore(40))
      await shot(page, `history-range-too-long-${viewport.name}`)

      // --- the days first, then the device
      await page.goto(`${server.base}/#/history`)
      await page.reload()
      await page.locator('#history-device option', { hasText: 'Truck 2' }).waitFor({ state: 'attached' })
      await page.locator('#history-from').fill(dayBefore(40))
      await page.locator('#history-to').fill(dayBefore(0))
      await page.locator('#history-device').selectOption({ label: 'Truck 2' })
      await page.getByRole('alert').filter({ hasText: TOO_LONG }).first().waitFor()
      expect(await picked(page)).toBe(ids.truck2)

      // --- a link to the range (a bookmark, a reload): the same
      await page.goto(`${server.base}/#/history/${ids.truck1}/${dayBefore(40)}/${dayBefore(0)}`)
      await page.reload()
      await page.getByRole('alert').filter({ hasText: TOO_LONG }).first().waitFor()
      await page.locator('#history-device option', { hasText: 'Truck 1' }).waitFor({ state: 'attached' })
      expect(await picked(page)).toBe(ids.truck1)
      // typed from the keyboard, as a person does at a desk (month, day, year in this locale)
      if (viewport.name === 'desktop') await typedRange(page)

      // --- and a shorter range then shows the chosen device's history
      await page.goto(`${server.base}/#/history/${ids.truck2}/${dayBefore(40)}/${dayBefore(0)}`)
      await page.getByRole('alert').filter({ hasText: TOO_LONG }).first().waitFor()
      // the device list is in before the form is sent (a slower server answers /devices after the alert)
      await page.locator('#history-device option', { hasText: 'Truck 2' }).waitFor({ state: 'attached' })
      await page.locator('#history-from').fill(dayBefore(1))
      await page.locator('.history-form button[type=submit]').click()
      await page.waitForFunction((id) => location.hash === `#/history/${id}/${new Date(Date.now() - 86_400_000).toISOString().slice(0, 10)}/${new Date().toISOString().slice(0, 10)}`, ids.truck2)
      expect(await picked(page)).toBe(ids.truck2)
      expect(await page.getByRole('alert').filter({ hasText: TOO_LONG }).count()).toBe(0)

      expect(watch.errors).toEqual([])
      expect(watch.leaks).toEqual([])
      await context.close()
    }, 60_000)
  }
})
