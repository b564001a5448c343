/** `npm run demo` prints a sign-in for the console: an admin's name and a password new at every run. */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createApp } from '../../src/app'
import { loadConfig } from '../../src/config'
import { openProduct } from '../../src/database'
import { loadTracks, runDemo } from '../../src/demo'
import { devicePortsOff, freePort } from '../support/process'
import { type ServerDatabase, serverDatabase } from '../support/server-database'

// the demo's database, on the run's engine
let database: ServerDatabase
beforeAll(async () => {
  database = await serverDatabase('tracker-demo-sign-in')
})
afterAll(() => database.close())

// one bus, three fixes: the sign-in is what is tested here (test/ingest/demo.test.ts replays them all)
const tracks = loadTracks().slice(0, 1).map((track) => ({ ...track, points: track.points.slice(0, 3) }))

async function demo(): Promise<{ name: string; password: string }> {
  const config = loadConfig({ ...devicePortsOff(), ...database.env, PORT: '0', HOST: '127.0.0.1', OSMAND_PORT: String(freePort()), LOG_LEVEL: 'silent' })
  const lines: string[] = []
  await runDemo({ config, speed: 1_000_000, exitWhenDone: true, tracks, print: (line) => lines.push(line) })
  const line = lines.find((l) => l.startsWith('console: '))
  const match = /sign in as "([^"]+)" with password (\S+)/.exec(line ?? '')
  if (!match) throw new Error(`no sign-in printed:\n${lines.join('\n')}`)
  return { name: match[1]!, password: match[2]! }
}

const signIn = (app: ReturnType<typeof createApp>, body: object) =>
  app.handle(new Request('http://localhost/session', { method: 'POST', body: JSON.stringify(body) }))

test('the demo prints an admin sign-in that works; the next run changes the password', async () => {
  const first = await demo()
  expect(first.name).toBe('demo')
  expect(first.password.length).toBeGreaterThanOrEqual(10)

  let opened = await openProduct(loadConfig(database.env), { purpose: 'command' })
  try {
    const res = await signIn(createApp({ stores: opened.stores }), first)
    expect(res.status).toBe(200)
    expect((await res.json()).user).toMatchObject({ name: 'demo', role: 'admin', account: { name: 'Demo Transit' } })
  } finally {
    await opened.close()
  }

  const second = await demo()
  expect(second.password).not.toBe(first.password)
  opened = await openProduct(loadConfig(database.env), { purpose: 'command' })
  try {
    const app = createApp({ stores: opened.stores })
    expect((await signIn(app, first)).status).toBe(401)
    expect((await signIn(app, second)).status).toBe(200)
  } finally {
    await opened.close()
  }
}, 30_000)
