/**
 * The operations endpoints and the request log, through createApp: /health, /ready, /metrics
 * (format, route templates, token), X-Request-Id, access log lines, and that no key or token
 * ever reaches a log line.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { statfsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { loadConfig } from '../../src/config'
import { createLogger } from '../../src/log'
import type { ServerStatus } from '../../src/ops/health'
import { redactUrl } from '../../src/ops/requests'
import { createServerMetrics } from '../../src/ops/server-metrics'
import { ids, keys, makeWorld, openWorld, problem, type EngineWorld } from '../support/world'

const lines: string[] = []
const status: ServerStatus = { listening: true, stopping: false }
const metrics = createServerMetrics()
let world: EngineWorld
let locked: EngineWorld

beforeAll(async () => {
  world = await openWorld(undefined, { log: createLogger('debug', (line) => lines.push(line)), metrics, status })
  locked = await openWorld(undefined, { config: loadConfig({ METRICS_TOKEN: 'scrape-me-0123456789' }) })
})
afterAll(async () => {
  await world.close()
  await locked.close()
})

const logged = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>)
/** after-response hooks run just after the answer: let earlier requests' lines land, then start afresh */
async function clearLog() {
  await Bun.sleep(5)
  lines.length = 0
}

describe('health and readiness', () => {
  test('GET /health is 200 {status: ok} without auth', async () => {
    const res = await world.call('GET', '/health')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ status: 'ok' })
  })

  test('GET /ready is 200 with its checks when the database, migrations and listeners are fine', async () => {
    const res = await world.call('GET', '/ready')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ status: 'ready', checks: { database: 'ok', migrations: 'ok', listeners: 'ok', disk: 'ok' } })
  })

  test('GET /ready is 503 while the database\'s file system has less than READY_MIN_FREE_MB free, 200 again once there is room', async () => {
    let free = 10 * 1024 * 1024
    const full = await openWorld(undefined, { diskFreeBytes: () => free })
    try {
      const body = await problem(await full.call('GET', '/ready'), 503)
      expect(body.detail).toContain('disk')
      expect(body.detail).toContain('10 MiB free')
      expect(body.detail).toContain('64 MiB')
      free = 65 * 1024 * 1024
      expect((await full.call('GET', '/ready')).status).toBe(200)
    } finally {
      await full.close()
    }
    // the real probe (statfs of the database's directory), with a threshold above what is free; 0 turns it off
    // (a SQLite file's: on PostgreSQL the database's disk is the server's, which no node sees)
    const stats = statfsSync(tmpdir())
    const aboveFreeMib = Math.floor((stats.bavail * stats.bsize) / (1024 * 1024)) + 1024
    for (const [mib, status] of [[aboveFreeMib, 503], [0, 200]]) {
      const other = makeWorld(undefined, { config: loadConfig({ READY_MIN_FREE_MB: String(mib) }) })
      try {
        expect((await other.call('GET', '/ready')).status).toBe(status)
      } finally {
        other.close()
      }
    }
  })

  test('GET /ready is a 503 problem while the listeners are down or a shutdown has begun', async () => {
    status.listening = false
    let body = await problem(await world.call('GET', '/ready'), 503)
    expect(body.detail).toContain('listeners')
    status.listening = true
    status.stopping = true
    body = await problem(await world.call('GET', '/ready'), 503)
    expect(body.detail).toContain('shutting down')
    status.stopping = false
    expect((await world.call('GET', '/ready')).status).toBe(200)
  })

  // SQLite's migrations table: a SQLite world on either run
  test('GET /ready is 503 when migrations are missing', async () => {
    const other = makeWorld()
    try {
      other.database.sqlite.run('DELETE FROM __drizzle_migrations')
      const body = await problem(await other.call('GET', '/ready'), 503)
      expect(body.detail).toContain('migrations')
    } finally {
      other.close()
    }
  })

  test('the three endpoints are in the OpenAPI document, health and ready without security', async () => {
    const doc = (await (await world.call('GET', '/openapi/json')).json()) as { paths: Record<string, { get: { security?: unknown[]; responses: Record<string, unknown> } }> }
    expect(doc.paths['/health'].get.security).toEqual([])
    expect(doc.paths['/ready'].get.security).toEqual([])
    expect(Object.keys(doc.paths['/ready'].get.responses)).toEqual(['200', '503'])
    expect(Object.keys(doc.paths['/metrics'].get.responses)).toContain('401')
  })
})

describe('metrics', () => {
  test('Prometheus text: requests by route template (not the raw path) and status, latency histogram', async () => {
    await world.call('GET', `/devices/${ids.truck1}`, { token: keys.alice })
    await world.call('GET', `/devices/${ids.truck2}`, { token: keys.alice })
    await world.call('GET', `/devices/${ids.truck1}`)
    await world.call('GET', '/no/such/path/42')
    await Bun.sleep(5) // the after-response hook runs just after the answer
    const res = await world.call('GET', '/metrics')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    const text = await res.text()
    expect(text).toContain('# TYPE tracker_http_requests_total counter')
    expect(text).toContain('tracker_http_requests_total{method="GET",route="/devices/:id",status="200"} 2')
    expect(text).toContain('tracker_http_requests_total{method="GET",route="/devices/:id",status="401"} 1')
    expect(text).toContain('tracker_http_requests_total{method="GET",route="unmatched",status="404"} 1')
    expect(text).not.toContain(ids.truck1)
    expect(text).toContain('# TYPE tracker_http_request_duration_seconds histogram')
    expect(text).toMatch(/tracker_http_request_duration_seconds_bucket\{method="GET",route="\/devices\/:id",le="\+Inf"\} 3/)
    expect(text).toMatch(/tracker_http_request_duration_seconds_count\{method="GET",route="\/devices\/:id"\} 3/)
    expect(text).toMatch(/^tracker_database_size_bytes\{file="database"\} [1-9]\d*$/m)
    expect(text).toContain('# TYPE tracker_ingest_batch_commit_seconds histogram')
    expect(text).toContain('# TYPE tracker_fixes_ingested_total counter')
    expect(text).toContain('# TYPE tracker_connected_devices gauge')
  })

  test('a validation failure and a thrown domain error are counted with their real status', async () => {
    await world.call('GET', '/devices?limit=0', { token: keys.alice })
    await Bun.sleep(5)
    const text = await (await world.call('GET', '/metrics')).text()
    expect(text).toContain('tracker_http_requests_total{method="GET",route="/devices",status="400"} 1')
  })

  test('with METRICS_TOKEN, /metrics wants it as a Bearer token', async () => {
    const none = await locked.call('GET', '/metrics')
    await problem(none, 401)
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="tracker"')
    await problem(await locked.call('GET', '/metrics', { token: 'wrong-token' }), 401)
    await problem(await locked.call('GET', '/metrics', { token: keys.alice }), 401)
    const ok = await locked.call('GET', '/metrics', { token: 'scrape-me-0123456789' })
    expect(ok.status).toBe(200)
    expect(await ok.text()).toContain('tracker_http_requests_total')
    // health and readiness stay open
    expect((await locked.call('GET', '/health')).status).toBe(200)
  })
})

describe('request ids and the access log', () => {
  test('every response carries an X-Request-Id; a well-formed incoming one is kept, a bad one replaced', async () => {
    const fresh = await world.call('GET', '/health')
    expect(fresh.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    const kept = await world.call('GET', '/devices', { token: keys.alice, headers: { 'x-request-id': 'lb-7f3a9c21e0' } })
    expect(kept.headers.get('x-request-id')).toBe('lb-7f3a9c21e0')
    const bad = await world.call('GET', '/health', { headers: { 'x-request-id': 'evil"\\ id with spaces' } })
    expect(bad.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    // errors too: 401, 404, 400
    for (const path of ['/devices', '/nowhere', `/devices/not-a-uuid`]) {
      expect((await world.call('GET', path)).headers.get('x-request-id')).toBeTruthy()
    }
  })

  test('one access line per request at info: method, route, status, duration, request id', async () => {
    await clearLog()
    const res = await world.call('GET', `/devices/${ids.truck1}/commands`, { token: keys.alice, headers: { 'x-request-id': 'trace-0001-abcd' } })
    expect(res.status).toBe(200)
    await Bun.sleep(5)
    const access = logged().filter((l) => l.msg === 'request')
    expect(access).toHaveLength(1)
    expect(access[0]).toMatchObject({ level: 'info', id: 'trace-0001-abcd', method: 'GET', route: '/devices/:id/commands', status: 200 })
    expect(typeof access[0].ms).toBe('number')
    expect(access[0].url).toBe(`/devices/${ids.truck1}/commands`)
  })

  test('probes are logged at debug, failures of them at info', async () => {
    await clearLog()
    await world.call('GET', '/health')
    await Bun.sleep(5)
    expect(logged().find((l) => l.msg === 'request')).toMatchObject({ level: 'debug', route: '/health' })
  })

  test('no API key, share token or short code ever reaches the log', async () => {
    await clearLog()
    const created = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })
    expect(created.status).toBe(200)
    const link = (await created.json()) as { token: string; original_url: string; short_url: string }
    const code = link.short_url.split('/').pop()!
    const shareQuery = new URL(link.original_url).search
    // the key and the token as a header, in the share page's query, in the short link, in a bad request
    await world.call('GET', '/devices', { token: keys.alice })
    await world.call('GET', '/devices', { token: link.token })
    await world.call('GET', `/devices/${ids.truck1}/history/route?from=1&to=2&token=${link.token}`, { token: link.token })
    await world.call('GET', `/share${shareQuery}`)
    await world.call('GET', `/s/${code}`)
    await world.call('GET', `/devices?limit=abc&key=${keys.alice}`, { token: keys.alice })
    await world.call('GET', '/devices', { token: `${keys.alice}-wrong` })
    await world.call('GET', `/nowhere?token=${link.token}`)
    // mangled URLs: a stray ?, a double slash, an empty pair, the token or code in a path segment
    await world.call('GET', `/share??token=${link.token}`)
    await world.call('GET', `//s/${code}`)
    await world.call('GET', `/share?x=1&&token=${link.token}`)
    await world.call('GET', `/share/${link.token}`)
    await world.call('GET', `/share/assets/${link.token}.js`)
    await world.call('GET', `/devices/${code}`, { token: keys.alice })
    await world.call('GET', `/share?t%6Fken=${link.token}`)
    await world.call('GET', `/share?to${link.token}`)
    await Bun.sleep(5)
    const text = lines.join('\n')
    expect(lines.length).toBeGreaterThanOrEqual(16)
    for (const secret of [keys.alice, link.token, encodeURIComponent(link.token), code]) expect(text).not.toContain(secret)
    expect(text).toContain('token=[redacted]')
    expect(text).toContain('/s/[redacted]')
  })

  test('redactUrl cuts secret parameters and the short-link code, keeps the rest', () => {
    expect(redactUrl('http://h/share?token=abc&x=1')).toBe('/share?token=[redacted]&x=1')
    expect(redactUrl('http://h/a?Access_Token=abc&TOKEN=d#frag')).toBe('/a?Access_Token=[redacted]&TOKEN=[redacted]')
    expect(redactUrl('http://h/a?to%6Ben=abc')).toBe('/a?token=[redacted]')
    expect(redactUrl('http://h/s/Zx81kq')).toBe('/s/[redacted]')
    expect(redactUrl('http://h/devices?limit=5')).toBe('/devices?limit=5')
  })

  test('redactUrl cuts anything shaped like a share token, an API key or a short code, wherever it stands', () => {
    const token = 'q3F8vZ0_kL-2mNpR7sT9uWxY1aBcDeFgHiJkLmNoPqR' // 43 base64url characters
    const apiKey = `trk_${token}`
    const code = 'Zx81kqAb12'
    expect(token).toHaveLength(43)
    expect(redactUrl(`http://h/share??token=${token}`)).toBe('/share??token=[redacted]')
    expect(redactUrl(`http://h/share?x=1&&token=${token}`)).toBe('/share?x=1&&token=[redacted]')
    expect(redactUrl(`http://h/share?${token}`)).toBe('/share?[redacted]')
    expect(redactUrl(`http://h/share?tokn=${token}&limit=5`)).toBe('/share?tokn=[redacted]&limit=5')
    expect(redactUrl(`http://h/share/${token}/x`)).toBe('/share/[redacted]/x')
    expect(redactUrl(`http://h/a/${apiKey}`)).toBe('/a/[redacted]')
    expect(redactUrl(`http://h/a?auth=Bearer%20${apiKey}`)).toBe('/a?auth=Bearer%20[redacted]')
    expect(redactUrl(`http://h//s/${code}`)).toBe('/s/[redacted]')
    expect(redactUrl(`http://h/x/s/${code}?c=${code}`)).toBe('/x/s/[redacted]?c=[redacted]')
    // an escaped character does not hide the shape
    expect(redactUrl(`http://h/share/${token.slice(0, 10)}%2D${token.slice(11)}`)).toBe('/share/[redacted]')
    // what a log should keep: ids, API words, times, asset names
    const kept = [
      '/devices/0f000000-0000-4000-8000-000000000001/history/route?from=2026-11-01T08:00:00.000Z&to=1730448000000&stop_threshold_time=300',
      '/devices?groups=0b000000-0000-4000-8000-000000000001,0b000000-0000-4000-8000-000000000002&limit=50&offset=100',
      '/share/assets/images/marker-icon-2x.png',
      '/openapi/json',
    ]
    for (const url of kept) expect(redactUrl(`http://h${url}`)).toBe(url)
  })
})
