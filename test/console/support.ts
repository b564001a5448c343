/** Shared by the console's browser tests: Debian's chromium, the tiles answered here, screenshots. */
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core'
import { sql } from 'drizzle-orm'
import { freePort, serverEnv, spawnServer, type ServerProcess } from '../support/process'
import { serverDatabase, type ServerDatabase } from '../support/server-database'

export const CHROMIUM = '/usr/bin/chromium'
export const ROOT = join(import.meta.dir, '..', '..')
export const OUTPUT = join(ROOT, 'test-output')
export const TILES = 'http://tiles.test'
export const PASSWORD = 'correct horse battery'
/** a plain tile with a faint edge, so the screenshots show a map's grid and not a void */
export const TILE = `<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256"><rect width="256" height="256" fill="#eef1ea"/><path d="M0 .5H256M.5 0V256" stroke="#d9ddd3"/></svg>`
/** a plain tile without the edge */
export const PLAIN_TILE = `<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256"><rect width="256" height="256" fill="#eef1ea"/></svg>`

/** whether Debian's chromium is there; says which test is skipped when it is not */
export function chromiumPresent(what: string): boolean {
  const present = existsSync(CHROMIUM)
  if (!present) console.warn(`skipping ${what}: ${CHROMIUM} is missing (apt-get install chromium)`)
  return present
}

export const launchChromium = (): Promise<Browser> =>
  chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })

/** a cheap argon2id hash of PASSWORD (the stored hash carries its cost): the server verifies it as any other */
export const cheapPasswordHash = () => Bun.password.hash(PASSWORD, { algorithm: 'argon2id', memoryCost: 1024, timeCost: 1 })

/** Every request not to `base` is watched: tiles are answered with `tile`, data: passes, anything else is refused and noted in `leaks`. */
export async function routeOutside(context: BrowserContext, base: string, leaks: string[], options: { tile?: string; onTile?: () => void } = {}): Promise<void> {
  await context.route(
    (url) => !url.href.startsWith(base),
    (route) => {
      const url = route.request().url()
      if (url.startsWith(`${TILES}/`)) {
        options.onTile?.()
        return route.fulfill({ status: 200, contentType: 'image/svg+xml', body: options.tile ?? TILE })
      }
      if (url.startsWith('data:')) return route.continue()
      leaks.push(url)
      return route.abort()
    },
  )
}

export const shot = (page: Page, name: string) => page.screenshot({ path: join(OUTPUT, `${name}.png`) })

export interface ConsoleServer {
  /** http://127.0.0.1:<port>, the console's address (APP_URL) */
  base: string
  /** its database, on the run's engine */
  database: ServerDatabase
  /** the ports the test asked for, as the server listens on them */
  ports: { http: number; osmand: number; gt06: number; teltonika: number }
  process: ServerProcess
  stop(): Promise<void>
}

/**
 * The real server in a child process for a browser test: a fresh database on the run's engine
 * (test/support/server-database.ts), the dataset imported, PASSWORD set for `signIn` users, tiles pointed at TILES. Protocol ports are
 * off unless asked for (`true`: a free port).
 */
export async function startConsoleServer(options: {
  name: string
  dataset: unknown
  signIn: string[]
  ports?: { osmand?: boolean; gt06?: boolean; teltonika?: boolean }
  env?: Record<string, string>
}): Promise<ConsoleServer> {
  mkdirSync(OUTPUT, { recursive: true })
  const database = await serverDatabase(options.name, options.dataset)
  const hash = await cheapPasswordHash()
  for (const user of options.signIn) await database.execute(sql`UPDATE users SET password_hash = ${hash} WHERE id = ${user}`)

  const ports = {
    http: freePort(),
    osmand: options.ports?.osmand ? freePort() : 0,
    gt06: options.ports?.gt06 ? freePort() : 0,
    teltonika: options.ports?.teltonika ? freePort() : 0,
  }
  const base = `http://127.0.0.1:${ports.http}`
  const server = spawnServer([process.execPath, '--max-http-header-size=65536', 'src/main.ts', 'serve'], {
    cwd: ROOT,
    env: {
      ...serverEnv(database, ports, 'info'),
      GT06_PORT: String(ports.gt06),
      APP_URL: base,
      TILE_URL: `${TILES}/{z}/{x}/{y}.png`,
      ...options.env,
    },
  })
  await server.waitFor((line) => line.msg === 'serving', 20_000)
  return {
    base,
    database,
    ports,
    process: server,
    async stop() {
      await server.terminate()
      await database.close()
    },
  }
}

export interface PageWatch {
  /** page errors and console errors (but the 401 of a signed-out probe, and those the test expects) */
  errors: string[]
  /** requests that tried to leave the host (refused) */
  leaks: string[]
  /** tile requests answered */
  tiles: number
}

export interface WatchOptions {
  /** the tile to answer with (TILE by default) */
  tile?: string
  /** console errors the test provokes on purpose, e.g. /status of (400|409)/ */
  expectedConsoleErrors?: RegExp
  /** called with each page of the context as it opens (the first one included), to watch more of it */
  onPage?: (page: Page) => void
}

/** A browser context that refuses requests leaving `base` and notes every page error, on each of its pages. */
export async function watchedPage(
  browser: Browser,
  base: string,
  contextOptions: BrowserContextOptions,
  options: WatchOptions = {},
): Promise<{ context: BrowserContext; page: Page; watch: PageWatch }> {
  const context = await browser.newContext({ deviceScaleFactor: 1, ...contextOptions })
  const watch: PageWatch = { errors: [], leaks: [], tiles: 0 }
  await routeOutside(context, base, watch.leaks, { tile: options.tile, onTile: () => watch.tiles++ })
  context.on('page', (page) => {
    page.on('pageerror', (error) => watch.errors.push(`pageerror: ${error.message}`))
    page.on('console', (message) => {
      if (message.type() !== 'error') return
      const text = message.text()
      if (text.includes('status of 401') || options.expectedConsoleErrors?.test(text)) return
      watch.errors.push(`console: ${text}`)
    })
    options.onPage?.(page)
  })
  const page = await context.newPage()
  return { context, page, watch }
}

/** Signs in on the console's form (with PASSWORD unless told) and waits for the live stream. */
export async function signIn(page: Page, base: string, name: string, options: { password?: string } = {}): Promise<void> {
  await page.goto(`${base}/`)
  await page.locator('#signin-name').fill(name)
  await page.locator('#signin-password').fill(options.password ?? PASSWORD)
  await page.keyboard.press('Enter')
  await page.locator('.who').waitFor({ state: 'attached' })
  await page.locator('.live-status.live').waitFor()
}

/**
 * The header's own settings (Time zone, Email alerts, Change password, Sign out): on a wide screen
 * they are in the menu under the signed-in name, opened first; in the phone's menu they are listed.
 */
export async function openAccountMenu(page: Page): Promise<void> {
  const toggle = page.locator('#account-toggle')
  if ((await toggle.isVisible()) && (await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click()
}
