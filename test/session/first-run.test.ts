/**
 * The first run end to end: `npm start`'s command on an empty database in a child process logs
 * the one-time setup link (at warn); the page, POST /setup and the session cookie work over a
 * real socket; the next start logs no link. No line but that one carries the token, and none the
 * password or the session id.
 */
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, serverEnv, spawnServer, type ServerProcess } from '../support/process'

const ROOT = join(import.meta.dir, '..', '..')
const dir = mkdtempSync(join(tmpdir(), 'tracker-first-run-'))
const PASSWORD = 'first run passphrase'
const running: ServerProcess[] = []
afterAll(async () => {
  for (const server of running) if (server.child.exitCode === null) await server.terminate()
  rmSync(dir, { recursive: true, force: true })
})

function start(port: number): ServerProcess {
  const env = {
    ...serverEnv(join(dir, 'tracker.db'), { http: port, osmand: 0, teltonika: 0 }, 'info'),
    APP_URL: `http://127.0.0.1:${port}`,
  }
  const server = spawnServer([process.execPath, '--max-http-header-size=65536', 'src/main.ts', 'serve'], { cwd: ROOT, env })
  running.push(server)
  return server
}

test('the setup link in the log, the page, POST /setup, signed in; the next start logs no link', async () => {
  const port = freePort()
  const base = `http://127.0.0.1:${port}`
  const first = start(port)
  const line = await first.waitFor((l) => typeof l.setup_url === 'string')
  await first.waitFor((l) => l.msg === 'serving')
  expect(line.level).toBe('warn')
  const link = String(line.setup_url)
  expect(link).toMatch(new RegExp(`^${base}/setup\\?token=[A-Za-z0-9_-]{43}$`))
  expect(String(line.msg)).toContain(link)
  const token = new URL(link).searchParams.get('token')!

  const page = await fetch(link)
  expect(page.status).toBe(200)
  expect(await page.text()).toContain('<form id="setup"')

  const created = await fetch(`${base}/setup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token, account: 'First Fleet', name: 'owner', password: PASSWORD }),
  })
  expect(created.status).toBe(200)
  const cookie = created.headers.get('set-cookie')!.split(';')[0]!
  const session = await fetch(`${base}/session`, { headers: { cookie } })
  expect(session.status).toBe(200)
  expect((await session.json()).user).toMatchObject({ name: 'owner', role: 'admin', account: { name: 'First Fleet' } })
  // the link is spent
  expect((await fetch(link)).status).toBe(403)

  await first.waitFor((l) => l.msg === 'request' && l.route === '/session' && l.method === 'GET')
  expect(await first.terminate()).toBe(0)
  const sessionId = cookie.split('=')[1]!
  const lines = first.text().split('\n')
  expect(lines.filter((l) => l.includes(token))).toEqual([expect.stringContaining('"level":"warn"')])
  expect(lines.filter((l) => l.includes(token)).length).toBe(1)
  expect(first.text()).not.toContain(PASSWORD)
  expect(first.text()).not.toContain(sessionId)

  const second = start(port)
  await second.waitFor((l) => l.msg === 'serving')
  expect((await fetch(`${base}/session`, { headers: { cookie } })).status).toBe(200)
  expect(await second.terminate()).toBe(0)
  expect(second.lines.some((l) => 'setup_url' in l || String(l.msg).includes('/setup?token='))).toBe(false)
}, 30_000)
