import { Database } from 'bun:sqlite'
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { loadConfig } from '../../src/config'
import { createLogger } from '../../src/log'
import { tileSource } from '../../src/share/page'
import { ids, keys, makeWorld, openWorld, type EngineWorld } from '../support/world'

let world: EngineWorld
const logLines: string[] = []
beforeEach(async () => {
  logLines.length = 0
  world = await openWorld(undefined, {
    config: loadConfig({ TILE_URL: 'https://{s}.tiles.example.org/{z}/{x}/{y}.png' }),
    log: createLogger('debug', (line) => logLines.push(line)),
  })
})
afterEach(() => world.close())

async function share(ttl = 3600) {
  const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1, ids.truck2], ttl } })
  return (await res.json()) as { id: string; token: string; original_url: string; short_url: string }
}

const pagePath = (link: { original_url: string }) => {
  const url = new URL(link.original_url)
  return url.pathname + url.search
}

function expectPageHeaders(res: Response) {
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
  expect(res.headers.get('referrer-policy')).toBe('no-referrer')
  expect(res.headers.get('cache-control')).toBe('no-store')
  expect(res.headers.get('content-security-policy')).toContain("script-src 'self'")
}

describe('GET /share?token=…', () => {
  test('is a web page for a phone, with its assets from this server and the configured tiles', async () => {
    const link = await share()
    const res = await world.call('GET', pagePath(link))
    expect(res.status).toBe(200)
    expectPageHeaders(res)
    expect(res.headers.get('content-security-policy')).toContain('img-src \'self\' data: https://*.tiles.example.org')
    const html = await res.text()
    expect(html).toContain('<meta name="viewport" content="width=device-width')
    expect(html).toContain('data-tile-url="https://{s}.tiles.example.org/{z}/{x}/{y}.png"')
    expect(html).not.toContain(link.token) // the script reads it from the address bar
    expect(html).not.toMatch(/unpkg|jsdelivr|cdnjs|https?:\/\/[^"]*\.js/)
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1])
    expect(assets.sort()).toEqual(['share/assets/leaflet.css', 'share/assets/leaflet.js', 'share/assets/share.css', 'share/assets/share.js'])
    for (const asset of [...assets, 'share/assets/images/marker-icon.png', 'share/assets/images/marker-icon-2x.png', 'share/assets/images/marker-shadow.png']) {
      const file = await world.call('GET', `/${asset}`)
      expect({ asset, status: file.status }).toEqual({ asset, status: 200 })
      expect((await file.arrayBuffer()).byteLength).toBeGreaterThan(500)
    }
    const slash = await world.call('GET', pagePath(link).replace('/share', '/share/'))
    expect(slash.status).toBe(301)
    expect(new URL(slash.headers.get('location')!, 'http://localhost/share/').href).toBe(`http://localhost${pagePath(link)}`)
    expect((await world.call('GET', '/share/assets/../../package.json')).status).toBe(404)
    expect((await world.call('GET', '/share/assets/nope.js')).status).toBe(404)
  })

  test('gives a first visit a viewer cookie, which its API calls carry: one view', async () => {
    const link = await share()
    const res = await world.call('GET', pagePath(link))
    const setCookie = res.headers.get('set-cookie')!
    expect(setCookie).toMatch(/^tracker_viewer=[A-Za-z0-9_-]{22}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax$/)
    const cookie = setCookie.split(';')[0]
    await world.call('GET', '/devices', { token: link.token, headers: { cookie } })
    const again = await world.call('GET', pagePath(link), { headers: { cookie } })
    expect(again.headers.get('set-cookie')).toBeNull()
    const row = (await (await world.call('GET', `/devices/share/${link.id}`, { token: keys.alice })).json()) as { unique_views: number; last_accessed_at: string }
    expect(row.unique_views).toBe(1)
    expect(row.last_accessed_at).toBe(new Date(world.clock.now()).toISOString())
  })

  test('a revoked or expired link is a friendly 410 page; an unknown or missing token a 404 page', async () => {
    const revoked = await share()
    await world.call('GET', pagePath(revoked)) // cached
    await world.call('DELETE', `/devices/share/${revoked.id}`, { token: keys.alice })
    const gone = await world.call('GET', pagePath(revoked))
    expect(gone.status).toBe(410)
    expectPageHeaders(gone)
    expect(await gone.text()).toContain('This shared link has ended')

    const expired = await share(60)
    world.clock.advance(60_000)
    const late = await world.call('GET', pagePath(expired))
    expect(late.status).toBe(410)

    for (const path of ['/share?token=nope', '/share']) {
      const res = await world.call('GET', path)
      expect(res.status).toBe(404)
      expectPageHeaders(res)
      expect(await res.text()).toContain('This link is not valid')
    }
  })

  test('the short link of an ended link, opened in a browser, is the same 410 page; an API client still gets the 404 problem', async () => {
    const browser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }
    const shortPath = (link: { short_url: string }) => new URL(link.short_url).pathname

    const revoked = await share()
    const expired = await share(60)
    await world.call('DELETE', `/devices/share/${revoked.id}`, { token: keys.alice })
    world.clock.advance(60_000)
    for (const link of [revoked, expired]) {
      const page = await world.call('GET', shortPath(link), { headers: browser })
      expect(page.status).toBe(410)
      expectPageHeaders(page)
      const html = await page.text()
      expect(html).toContain('This shared link has ended')
      // its stylesheet resolves from /s/{code} to the page's own
      const href = /<link rel="stylesheet" href="([^"]+)"/.exec(html)![1]
      const css = await world.call('GET', new URL(href, `http://localhost${shortPath(link)}`).pathname)
      expect(css.status).toBe(200)
      expect(css.headers.get('content-type')).toStartWith('text/css')

      for (const accept of [undefined, 'application/json', '*/*']) {
        const api = await world.call('GET', shortPath(link), { headers: accept ? { accept } : {} })
        expect({ accept, status: api.status, type: api.headers.get('content-type') }).toEqual({ accept, status: 404, type: 'application/problem+json' })
      }
    }

    // an unknown code is the page's "not valid" 404 in a browser, the problem otherwise
    const unknown = await world.call('GET', '/s/Zz9Zz9Zz9Z', { headers: browser })
    expect(unknown.status).toBe(404)
    expectPageHeaders(unknown)
    expect(await unknown.text()).toContain('This link is not valid')
    expect((await world.call('GET', '/s/Zz9Zz9Zz9Z')).headers.get('content-type')).toBe('application/problem+json')

    // an active link still redirects a browser
    const active = await share()
    const redirect = await world.call('GET', shortPath(active), { headers: browser })
    expect(redirect.status).toBe(302)
    expect(redirect.headers.get('location')).toBe(active.original_url)
  })

  test("an asset named like a member of Object.prototype is a 404 problem, not a 500", async () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__']) {
      const res = await world.call('GET', `/share/assets/${name}`)
      expect({ name, status: res.status, type: res.headers.get('content-type') }).toEqual({ name, status: 404, type: 'application/problem+json' })
    }
    expect(logLines.map((line) => JSON.parse(line).level)).not.toContain('error')
  })

  test('no token reaches the logs', async () => {
    const link = await share()
    await world.call('GET', pagePath(link))
    await world.call('GET', `/devices/${ids.truck1}/commands`, { token: link.token })
    await world.call('GET', '/devices/nope', { token: link.token })
    await world.call('GET', '/devices', { token: 'x'.repeat(43) })
    await world.call('DELETE', `/devices/share/${link.id}`, { token: keys.alice })
    await world.call('GET', '/devices', { token: link.token })
    expect(logLines.join('\n')).not.toContain(link.token)
  })
})

describe('what the page reads for "Updated …"', () => {
  test("the live stream starts with each device's newest stored fix, not the record's updated_at", async () => {
    // truck2 reported yesterday (an imported history); its record was written later, by the import
    const yesterday = world.clock.now() / 1000 - 86_400
    await world.importMore({
      positions: [
        { device: ids.truck2, timestamp: yesterday - 600, latitude: 45.7, longitude: 4.8, speed: 30 },
        { device: ids.truck2, timestamp: yesterday, latitude: 45.75, longitude: 4.85, speed: 12.5 },
      ],
    })
    const link = await share()
    const device = (await (await world.call('GET', `/devices/${ids.truck2}`, { token: link.token })).json()) as { updated_at: string }
    expect(Date.parse(device.updated_at)).not.toBe(yesterday * 1000)

    const res = await world.call('GET', '/devices/stream', { token: link.token })
    expect(res.status).toBe(200)
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
    let text = ''
    while (!text.includes(ids.truck2)) {
      const chunk = await reader.read()
      if (chunk.done) break
      text += chunk.value
    }
    await reader.cancel()
    const fixes = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]))
    // truck1 has no stored fix and none live: nothing to say about it
    expect(fixes).toEqual([{ id: ids.truck2, latitude: 45.75, longitude: 4.85, speed: 12.5, course: null, timestamp: yesterday }])
  })
})

// SQLite's write lock, held by another connection to the file: these build a SQLite world on either run
describe('views while another process holds the write lock', () => {
  /** polls `condition` (no timing asserted: the test's own timeout is the limit) */
  async function until(condition: () => boolean) {
    while (!condition()) await Bun.sleep(5)
  }

  test('a share-token read and the share page answer 200; the views are written once the lock is gone', async () => {
    const lines: string[] = []
    const locked = makeWorld(undefined, { shareAccessFlushMs: 10, log: createLogger('debug', (line) => lines.push(line)) })
    // a second connection to the file, as the CLI (an import, a backup restore) would open
    const other = new Database(join(locked.dir, 'tracker.db'))
    try {
      const created = await locked.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })
      const link = (await created.json()) as { id: string; token: string; original_url: string }
      const stored = () => other.query<{ unique_views: number; last_accessed_at: number | null }, [string]>('SELECT unique_views, last_accessed_at FROM share_links WHERE id = ?').get(link.id)
      other.run('BEGIN IMMEDIATE')
      try {
        const api = await locked.call('GET', '/devices', { token: link.token, headers: { 'user-agent': 'Phone/1.0' } })
        expect(api.status).toBe(200)
        expect(((await api.json()) as unknown[]).length).toBe(1)
        const page = await locked.call('GET', pagePath(link))
        expect(page.status).toBe(200)
        // reading the link is a read too: it reports both viewers (the phone, the page's new cookie) already
        const read = await locked.call('GET', `/devices/share/${link.id}`, { token: keys.alice })
        expect(((await read.json()) as { unique_views: number }).unique_views).toBe(2)
        // the background flush has tried, and failed without waiting for the lock
        await until(() => lines.some((line) => line.includes('share link views not written yet')))
        expect(stored()).toEqual({ unique_views: 0, last_accessed_at: null })
      } finally {
        other.run('COMMIT')
      }
      await until(() => stored()?.unique_views === 2)
      expect(stored()).toEqual({ unique_views: 2, last_accessed_at: locked.clock.now() })
      const read = await locked.call('GET', `/devices/share/${link.id}`, { token: keys.alice })
      expect(((await read.json()) as { unique_views: number }).unique_views).toBe(2)
    } finally {
      other.close()
      locked.close()
    }
  })

  test('at most 1,000 new viewers of a link wait for the write; beyond that a new viewer is not counted until it is written', async () => {
    const lines: string[] = []
    const locked = makeWorld(undefined, { shareAccessFlushMs: 10, log: createLogger('debug', (line) => lines.push(line)) })
    const other = new Database(join(locked.dir, 'tracker.db'))
    try {
      const created = await locked.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })
      const link = (await created.json()) as { id: string; token: string }
      const views = async () => ((await (await locked.call('GET', `/devices/share/${link.id}`, { token: keys.alice })).json()) as { unique_views: number }).unique_views
      const view = (agent: string) => locked.call('GET', `/devices/${ids.truck1}`, { token: link.token, headers: { 'user-agent': agent } })
      other.run('BEGIN IMMEDIATE')
      try {
        for (let i = 0; i < 1005; i++) expect((await view(`Browser/${i}`)).status).toBe(200)
        expect(await views()).toBe(1000)
      } finally {
        other.run('COMMIT')
      }
      await until(() => other.query<{ n: number }, [string]>('SELECT unique_views AS n FROM share_links WHERE id = ?').get(link.id)?.n === 1000)
      // room again: the 5 left out count when they come back, the 1,000 counted do not count twice
      for (let i = 0; i < 1005; i += 100) await view(`Browser/${i}`)
      for (let i = 1000; i < 1005; i++) await view(`Browser/${i}`)
      expect(await views()).toBe(1005)
    } finally {
      other.close()
      locked.close()
    }
  })
})

test('tileSource: the tile server as a CSP source', () => {
  expect(tileSource('https://{s}.tile.openstreetmap.org/{z}/{x}/{y}.png')).toBe('https://*.tile.openstreetmap.org')
  expect(tileSource('http://127.0.0.1:8080/tiles/{z}/{x}/{y}.png')).toBe('http://127.0.0.1:8080')
  expect(tileSource('tiles/{z}/{x}/{y}.png')).toBe('https:')
})
