/**
 * `npm start` and `npm run demo` killed with SIGTERM (a service manager, a terminal closing) leave
 * no server behind holding the port: the scripts `exec` the server, so the shell npm runs them with
 * is replaced by it and npm's signal reaches the server itself.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { freePort, serverEnv, spawnServer } from '../support/process'
import { serverDatabase, type ServerDatabase } from '../support/server-database'

const ROOT = join(import.meta.dir, '../..')
const hasNpm = Bun.which('npm') !== null
/** each script's database, on the run's engine */
const databases: ServerDatabase[] = []
afterAll(async () => {
  await Promise.all(databases.map((database) => database.close()))
}, 20_000)

/** Whether something accepts connections on 127.0.0.1:port. */
async function listening(port: number): Promise<boolean> {
  try {
    const socket = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } })
    socket.end()
    return true
  } catch {
    return false
  }
}

describe.skipIf(!hasNpm)('npm scripts', () => {
  for (const script of [['start'], ['run', 'demo']]) {
    test(`npm ${script.join(' ')} killed with SIGTERM frees the port`, async () => {
      const port = freePort()
      const database = await serverDatabase(`tracker-npm-${script.at(-1)}`)
      databases.push(database)
      const env = { ...serverEnv(database, { http: port, osmand: freePort(), teltonika: 0 }, 'info'), NODE_ENV: undefined }
      const npm = spawnServer(['npm', ...script, '--silent'], { cwd: ROOT, env })
      await npm.waitFor((line) => line.msg === 'serving', 20_000)
      expect(await listening(port)).toBe(true)
      await npm.terminate('SIGTERM')
      // the server shuts down on the signal; give it its drain time, then the port must be free
      let free = false
      for (let i = 0; i < 100 && !free; i++) {
        free = !(await listening(port))
        if (!free) await Bun.sleep(100)
      }
      expect(free).toBe(true)
    }, 30_000)
  }
})
