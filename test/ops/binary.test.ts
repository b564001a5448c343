/**
 * The single binary: `npm run build`'s script compiles dist/tracker once (into a temp folder),
 * then the executable is copied into an empty folder and run from there. Where the machine lets
 * us (root: a private mount namespace), the repository, node_modules included, is hidden from
 * it, so migrations, web pages, the docs UI and the geocoder's cities can only come from inside.
 * It creates its database, imports, issues a key, serves, answers /health, /ready and an
 * authenticated call, ingests a fix, and exits 0 on SIGTERM. A .env and a bunfig.toml in its
 * folder are ignored. `tracker demo` replays its built-in bus recordings with no folder given.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, spawnServer } from '../support/process'

const ROOT = join(import.meta.dir, '..', '..')
const work = join(tmpdir(), `tracker-binary-${process.pid}`)
const dist = join(work, 'dist')
const home = join(work, 'run')
const inputs = join(work, 'inputs')
const binary = join(home, 'tracker')
const ALICE = '7b0c1a52-55c3-4b5e-9f5e-6f0a8a7a0001'
const BUS = '4d2a6c1e-8f1b-4a8e-9c53-1b7e2d9f0001'

/** Hide the repository from the binary when we may (a private mount namespace needs root). */
function hidingPrefix(): string[] {
  const prefix = ['unshare', '-m', '--propagation', 'private', 'sh', '-c', 'mount -t tmpfs none "$0" && exec "$@"', ROOT]
  try {
    const probe = Bun.spawnSync([...prefix, 'sh', '-c', `test ! -e "${join(ROOT, 'package.json')}"`], { stdout: 'ignore', stderr: 'ignore' })
    return probe.exitCode === 0 ? prefix : []
  } catch {
    return []
  }
}
let prefix: string[] = []

/** Only what an operator would set: no Bun or test variables leak in from this process. */
function env(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LOG_LEVEL: 'info', ...extra }
}

function run(args: string[], extra: Record<string, string> = {}) {
  const result = Bun.spawnSync([...prefix, binary, ...args], { cwd: home, env: env(extra), stdout: 'pipe', stderr: 'pipe' })
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() }
}

let buildMs = 0
beforeAll(() => {
  rmSync(work, { recursive: true, force: true })
  mkdirSync(home, { recursive: true })
  mkdirSync(inputs, { recursive: true })
  const started = performance.now()
  const build = Bun.spawnSync([process.execPath, join(ROOT, 'scripts/build.ts'), '--outdir', dist], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  buildMs = performance.now() - started
  if (build.exitCode !== 0) throw new Error(`build failed:\n${build.stdout}\n${build.stderr}`)
  copyFileSync(join(dist, 'tracker'), binary)
  Bun.spawnSync(['chmod', '+x', binary])
  copyFileSync(join(ROOT, 'examples', 'fleet.json'), join(inputs, 'fleet.json'))
  prefix = hidingPrefix()
}, 60_000)

afterAll(() => rmSync(work, { recursive: true, force: true }))

describe('the single binary', () => {
  test('is built alone into its folder, and runs alone in another', () => {
    expect(readdirSync(dist)).toEqual(['tracker'])
    expect(readdirSync(home)).toEqual(['tracker'])
    console.log(`build ${Math.round(buildMs)} ms; repository hidden from the binary: ${prefix.length > 0}`)
  })

  test('from an empty folder: import, key create, serve, /health, /ready, an authenticated call, a fix; exit 0 on SIGTERM', async () => {
    const imported = run(['import', join(inputs, 'fleet.json')])
    expect(imported.stderr).toBe('')
    expect(imported.code).toBe(0)
    expect(existsSync(join(home, 'data', 'tracker.db'))).toBe(true)

    const key = run(['key', 'create', '--user', ALICE])
    expect(key.code).toBe(0)
    const apiKey = key.stdout.trim()
    expect(apiKey.length).toBeGreaterThan(20)

    const osmandPort = freePort()
    const started = performance.now()
    const server = spawnServer([...prefix, binary, 'serve'], {
      cwd: home,
      env: env({ PORT: '0', HOST: '127.0.0.1', OSMAND_PORT: String(osmandPort), GT06_PORT: '0', TELTONIKA_PORT: '0', H02_PORT: '0', MEITRACK_PORT: '0' }),
    })
    try {
      const serving = await server.waitFor((l) => l.msg === 'serving')
      const base = `http://127.0.0.1:${serving.port}`
      let ready = await fetch(`${base}/ready`)
      while (ready.status !== 200 && performance.now() - started < 10_000) {
        await Bun.sleep(10)
        ready = await fetch(`${base}/ready`)
      }
      console.log(`binary ready in ${Math.round(performance.now() - started)} ms`)

      const health = await fetch(`${base}/health`)
      expect(health.status).toBe(200)
      expect(await health.json()).toEqual({ status: 'ok' })
      expect(ready.status).toBe(200)

      const devices = await fetch(`${base}/devices`, { headers: { authorization: `Bearer ${apiKey}` } })
      expect(devices.status).toBe(200)
      expect(devices.headers.get('x-request-id')).toBeTruthy()
      expect(JSON.stringify(await devices.json())).toContain(BUS)

      // the geocoder's embedded cities name the places of a travel
      const travels = await fetch(`${base}/devices/${BUS}/history/travels?from=1764000000&to=1764086400`, { headers: { authorization: `Bearer ${apiKey}` } })
      expect(travels.status).toBe(200)
      const body = (await travels.json()) as { travels: { start: { address: string | null } }[] }
      expect(body.travels.length).toBeGreaterThan(0)
      expect(body.travels[0].start.address).toMatch(/, IE$/)

      // embedded web assets: the docs UI and the share page
      for (const path of ['/openapi', '/openapi/assets/swagger-ui-bundle.js', '/openapi/json', '/share/assets/leaflet.js', '/share/assets/share.js']) {
        const res = await fetch(`${base}${path}`)
        expect(`${path} ${res.status}`).toBe(`${path} 200`)
        expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000)
      }
      // the console: its page names its embedded bundle (the sources are not there to build it from)
      const consolePage = await (await fetch(`${base}/`)).text()
      const consoleScript = /src="(console\/assets\/main-[a-z0-9]+\.js)"/.exec(consolePage)?.[1]
      expect(consoleScript).toBeDefined()
      const bundle = await fetch(`${base}/${consoleScript}`)
      expect(bundle.status).toBe(200)
      const bundleText = await bundle.text()
      expect(bundleText).toContain('devices/stream')
      // a file split from the entry (History's chart library, imported when needed) is embedded too
      const chunk = /import\("\.\/([^"]+\.js)"\)/.exec(bundleText)?.[1]
      expect(chunk).toBeDefined()
      expect((await fetch(`${base}/console/assets/${chunk}`)).status).toBe(200)

      const fix = await fetch(`http://127.0.0.1:${osmandPort}/?id=BUS304&lat=52.66&lon=-8.63&timestamp=${Math.floor(Date.now() / 1000)}&speed=10`)
      expect(fix.status).toBe(200)
      const metrics = await (await fetch(`${base}/metrics`)).text()
      expect(metrics).toContain('tracker_fixes_ingested_total{protocol="osmand"} 1')
      expect(metrics).toMatch(/tracker_ingest_batch_commit_seconds_count [1-9]/)
    } finally {
      const code = await server.terminate('SIGTERM')
      expect(code).toBe(0)
    }
    expect(server.lines.some((l) => l.msg === 'stopped')).toBe(true)
    expect(server.lines.filter((l) => l.level === 'error')).toEqual([])
  }, 30_000)

  test('a .env or bunfig.toml in its folder changes nothing: configuration is the environment', () => {
    const dir = join(work, 'stray')
    mkdirSync(dir, { recursive: true })
    // if the .env were read, PORT would be invalid and the command would stop with exit 2
    writeFileSync(join(dir, '.env'), 'PORT=not-a-port\nDATABASE_PATH=./from-dotenv.db\n')
    writeFileSync(join(dir, 'bunfig.toml'), 'preload = ["./preload.js"]\n')
    writeFileSync(join(dir, 'preload.js'), 'console.log("PRELOADED")\n')
    const result = Bun.spawnSync([...prefix, binary, 'migrate'], { cwd: dir, env: env(), stdout: 'pipe', stderr: 'pipe' })
    expect(result.stderr.toString()).toBe('')
    expect(result.exitCode).toBe(0)
    expect(result.stdout.toString()).toBe('database ./data/tracker.db is migrated\n')
    expect(existsSync(join(dir, 'from-dotenv.db'))).toBe(false)
  })

  test('demo: the bus recordings are inside, so it replays all of them with no folder given', () => {
    const database = join(work, 'demo', 'demo.db')
    const demo = run(['demo', '--speed', '1000000', '--exit'], {
      DATABASE_PATH: database, PORT: '0', HOST: '127.0.0.1', OSMAND_PORT: String(freePort()), GT06_PORT: '0', TELTONIKA_PORT: '0', H02_PORT: '0', MEITRACK_PORT: '0', LOG_LEVEL: 'warn',
    })
    expect(demo.stderr).toBe('')
    expect(demo.code).toBe(0)
    expect(demo.stdout).toContain('demo fleet: 9 buses')
    expect(demo.stdout).toContain('replay done: 3677 fixes accepted, 0 refused')
    const db = new Database(database, { readonly: true })
    try {
      expect(db.query<{ n: number }, []>('SELECT count(*) AS n FROM positions').get()!.n).toBe(3677)
    } finally {
      db.close()
    }
  })

  test('takes the other commands too: version, backup, usage errors', () => {
    expect(run(['version']).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/)
    const backup = run(['backup', join(home, 'backups', 'first.db')])
    expect(backup.code).toBe(0)
    expect(backup.stdout).toContain('integrity ok')
    expect(run(['nonsense']).code).toBe(2)
  })
})
