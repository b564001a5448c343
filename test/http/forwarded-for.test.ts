/**
 * Behind a proxy that TRUSTED_PROXIES does not name, every client is the proxy's address, so one
 * client's bad keys get everyone's sign-in refused (issue 19, item 7). The server says so: a
 * warning in /ready's body (readiness itself unaffected) and a log line at warn, at once and then
 * at most once an hour, when X-Forwarded-For arrives from a peer it does not trust.
 */
import { describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'
import { createLogger } from '../../src/log'
import { baseDataset, keys, openWorld, type EngineWorld } from '../support/world'

const HOUR_MS = 60 * 60 * 1000

function logged() {
  const lines: Record<string, unknown>[] = []
  const log = createLogger('info', (line) => lines.push(JSON.parse(line)))
  const warnings = () => lines.filter((line) => line.level === 'warn' && String(line.msg).includes('X-Forwarded-For'))
  return { log, warnings }
}

async function ready(world: EngineWorld): Promise<{ status: string; warnings?: string[] }> {
  const res = await world.call('GET', '/ready')
  expect(res.status).toBe(200)
  return (await res.json()) as { status: string; warnings?: string[] }
}

describe('without TRUSTED_PROXIES', () => {
  test('X-Forwarded-For on requests: /ready warns (still 200), the log warns once, then at most once an hour with the count', async () => {
    const { log, warnings } = logged()
    const world = await openWorld(baseDataset(), { log })
    try {
      // requests without the header say nothing
      expect((await world.call('GET', '/devices', { token: keys.alice })).status).toBe(200)
      expect((await ready(world)).warnings).toBeUndefined()
      expect(warnings()).toEqual([])

      for (let i = 0; i < 10; i++) await world.call('GET', '/devices', { token: keys.alice, headers: { 'x-forwarded-for': `198.51.100.${i}` } })
      const body = await ready(world)
      expect(body.status).toBe('ready')
      expect(body.warnings).toHaveLength(1)
      expect(body.warnings![0]).toContain('TRUSTED_PROXIES')
      expect(body.warnings![0]).toContain('10 requests')
      expect(warnings()).toHaveLength(1)
      expect(String(warnings()[0]!.msg)).toContain('TRUSTED_PROXIES')

      // within the hour: counted, not written
      world.clock.advance(HOUR_MS - 1)
      await world.call('POST', '/session', { body: { name: 'alice', password: 'whatever it is here' }, headers: { 'x-forwarded-for': '198.51.100.1' } })
      expect(warnings()).toHaveLength(1)
      world.clock.advance(1)
      await world.call('GET', '/health', { headers: { 'x-forwarded-for': '198.51.100.1' } })
      expect(warnings()).toHaveLength(2)
      // the line sums what came since the previous one: 9 more of the first ten, and these two
      expect(warnings()[1]).toMatchObject({ requests: 11 })
    } finally {
      await world.close()
    }
  })
})

describe('over a real socket', () => {
  async function serve(env: Record<string, string>) {
    const { log, warnings } = logged()
    const world = await openWorld(baseDataset(), { log, config: loadConfig(env) })
    const server = world.app.listen({ port: 0, hostname: '127.0.0.1' })
    const base = `http://127.0.0.1:${server.server!.port}`
    const signIn = () =>
      fetch(`${base}/session`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.9' }, body: JSON.stringify({ name: 'nobody', password: 'not a password' }) })
    const readyBody = async () => (await (await fetch(`${base}/ready`)).json()) as { warnings?: string[] }
    return { signIn, readyBody, warnings, stop: async () => { await world.app.stop(); await world.close() } }
  }

  test('TRUSTED_PROXIES that does not name the peer: the warning names the peer', async () => {
    const { signIn, readyBody, warnings, stop } = await serve({ TRUSTED_PROXIES: '10.9.9.9' })
    try {
      expect((await signIn()).status).toBe(401)
      expect(warnings()).toHaveLength(1)
      expect(warnings()[0]).toMatchObject({ peer: expect.stringContaining('127.0.0.1') })
      expect((await readyBody()).warnings![0]).toContain('127.0.0.1')
    } finally {
      await stop()
    }
  })

  test('a trusted proxy sending X-Forwarded-For: no warning', async () => {
    const { signIn, readyBody, warnings, stop } = await serve({ TRUSTED_PROXIES: '127.0.0.1' })
    try {
      expect((await signIn()).status).toBe(401)
      expect(warnings()).toEqual([])
      expect((await readyBody()).warnings).toBeUndefined()
    } finally {
      await stop()
    }
  })
})
