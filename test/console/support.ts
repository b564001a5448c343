/** Shared by the console's browser tests: Debian's chromium, the tiles answered here, screenshots. */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'

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
