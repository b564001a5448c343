/**
 * The first run end to end: `npm start`'s command on an empty database in a child process logs
 * the one-time setup link (at warn); the page, POST /setup and the session cookie work over a
 * real socket; the next start logs no link. No line but that one carries the token, and none the
 * password or the session id.
 */
import { afterAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { consoleAddresses } from '../../src/session/setup'
import { freePort, serverEnv, spawnServer, type ServerProcess } from '../support/process'
import { serverDatabase, type ServerDatabase } from '../support/server-database'

const ROOT = join(import.meta.dir, '..', '..')
const PASSWORD = 'first run passphrase'
const running: ServerProcess[] = []
const databases: ServerDatabase[] = []
afterAll(async () => {
  for (const server of running) if (server.child.exitCode === null) await server.terminate()
  await Promise.all(databases.map((database) => database.close()))
}, 20_000)

/** an empty database on the run's engine (no account, no user), closed after the file */
async function emptyDatabase(name: string): Promise<ServerDatabase> {
  const database = await serverDatabase(`tracker-first-run-${name}`)
  databases.push(database)
  return database
}

function start(port: number, database: ServerDatabase, appUrl: string | undefined = `http://127.0.0.1:${port}`): ServerProcess {
  const env = {
    ...serverEnv(database, { http: port, osmand: 0, teltonika: 0 }, 'info'),
    APP_URL: appUrl,
  }
  const server = spawnServer([process.execPath, '--max-http-header-size=65536', 'src/main.ts', 'serve'], { cwd: ROOT, env })
  running.push(server)
  return server
}

test('the setup link in the log, the page, POST /setup, signed in; the next start logs no link', async () => {
  const port = freePort()
  const base = `http://127.0.0.1:${port}`
  const database = await emptyDatabase('first')
  const first = start(port, database)
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

  const second = start(port, database)
  await second.waitFor((l) => l.msg === 'serving')
  expect((await fetch(`${base}/session`, { headers: { cookie } })).status).toBe(200)
  expect(await second.terminate()).toBe(0)
  expect(second.lines.some((l) => 'setup_url' in l || String(l.msg).includes('/setup?token='))).toBe(false)
}, 30_000)

test('without APP_URL the setup link names the address the server listens on, not localhost; no APP_URL warning on loopback', async () => {
  const port = freePort()
  const server = start(port, await emptyDatabase('no-app-url'), undefined)
  const line = await server.waitFor((l) => typeof l.setup_url === 'string')
  await server.waitFor((l) => l.msg === 'serving')
  expect(line.setup_urls).toEqual([expect.stringMatching(new RegExp(`^http://127\\.0\\.0\\.1:${port}/setup\\?token=[A-Za-z0-9_-]{43}$`))])
  expect(line.setup_url).toBe((line.setup_urls as string[])[0]!)
  // and the page opened there sets up, then signs in again and writes (its Origin is the address it was opened at)
  const base = `http://127.0.0.1:${port}`
  const token = new URL(String(line.setup_url)).searchParams.get('token')!
  const created = await fetch(`${base}/setup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: base },
    body: JSON.stringify({ token, account: 'Pi Fleet', name: 'owner', password: PASSWORD }),
  })
  expect(created.status).toBe(200)
  const signedIn = await fetch(`${base}/session`, { method: 'POST', headers: { 'content-type': 'application/json', origin: base }, body: JSON.stringify({ name: 'owner', password: PASSWORD }) })
  expect(signedIn.status).toBe(200)
  const cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!
  const group = await fetch(`${base}/groups`, { method: 'POST', headers: { 'content-type': 'application/json', origin: base, cookie }, body: JSON.stringify({ name: 'Vans' }) })
  expect(group.status).toBe(201)
  expect(await server.terminate()).toBe(0)
  expect(server.lines.some((l) => String(l.msg).includes('APP_URL is not set'))).toBe(false)
}, 30_000)

test('listening on every address (HOST 0.0.0.0 or ::), the console addresses are each interface address and localhost; APP_URL alone when set', () => {
  // the start's log names these (a test may not listen beyond 127.0.0.1, so the table is given)
  const interfaces = {
    lo: [{ address: '127.0.0.1', netmask: '255.0.0.0', family: 'IPv4', mac: '00:00:00:00:00:00', internal: true, cidr: '127.0.0.1/8' }],
    eth0: [
      { address: '192.168.1.20', netmask: '255.255.255.0', family: 'IPv4', mac: '02:00:00:00:00:01', internal: false, cidr: '192.168.1.20/24' },
      { address: 'fe80::1', netmask: 'ffff:ffff:ffff:ffff::', family: 'IPv6', mac: '02:00:00:00:00:01', internal: false, cidr: 'fe80::1/64', scopeid: 2 },
      { address: '2001:db8::20', netmask: 'ffff:ffff:ffff:ffff::', family: 'IPv6', mac: '02:00:00:00:00:01', internal: false, cidr: '2001:db8::20/64', scopeid: 0 },
    ],
    wlan0: [{ address: '10.0.0.7', netmask: '255.255.255.0', family: 'IPv4', mac: '02:00:00:00:00:02', internal: false, cidr: '10.0.0.7/24' }],
  } as Parameters<typeof consoleAddresses>[2]
  const unset = { appUrl: 'http://localhost:3000', appUrlSet: false }
  expect(consoleAddresses({ ...unset, host: '0.0.0.0' }, 3000, interfaces)).toEqual(['http://192.168.1.20:3000', 'http://10.0.0.7:3000', 'http://localhost:3000'])
  expect(consoleAddresses({ ...unset, host: '::' }, 3000, interfaces)).toEqual(['http://192.168.1.20:3000', 'http://[2001:db8::20]:3000', 'http://10.0.0.7:3000', 'http://localhost:3000'])
  expect(consoleAddresses({ ...unset, host: '192.168.1.20' }, 3000, interfaces)).toEqual(['http://192.168.1.20:3000'])
  expect(consoleAddresses({ appUrl: 'https://fleet.example.org/tracker/', appUrlSet: true, host: '0.0.0.0' }, 3000, interfaces)).toEqual(['https://fleet.example.org/tracker'])
})
