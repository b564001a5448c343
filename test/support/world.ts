/**
 * A small world for API tests: two accounts, groups, users with keys, models with commands and
 * devices, imported through the real dataset import into a fresh SQLite file (`makeWorld`), or,
 * with `openWorld`, into the engine the run names: TRACKER_TEST_ENGINE=postgres (npm run test:pg)
 * opens a fresh PostgreSQL database of its own, anything else a SQLite file as makeWorld does.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Database } from 'bun:sqlite'
import { type SQL, sql } from 'drizzle-orm'
import { drizzle as drizzleSqlite } from 'drizzle-orm/bun-sqlite'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import { openDatabase, type DatabaseHandle } from '../../db/client'
import { openPostgres, type PostgresHandle } from '../../db/postgres/client'
import { createApp, type AppDeps } from '../../src/app'
import { type Clock, manualClock } from '../../src/clock'
import { importDataset, type ImportOptions, type ImportSummary } from '../../src/dataset/service'
import { createSqliteStores, type Stores } from '../../src/store'
import { createPostgresStores } from '../../src/store/postgres'
import { importNow } from './import'
import { freshPostgres } from './postgres'

const idValues = {
  acme: '0a000000-0000-4000-8000-000000000001',
  globex: '0a000000-0000-4000-8000-000000000002',
  trucks: '0b000000-0000-4000-8000-000000000001',
  vans: '0b000000-0000-4000-8000-000000000002',
  globexGroup: '0b000000-0000-4000-8000-000000000003',
  alice: '0c000000-0000-4000-8000-000000000001', // trucks + vans
  bob: '0c000000-0000-4000-8000-000000000002', // vans only
  carol: '0c000000-0000-4000-8000-000000000003', // globex
  dana: '0c000000-0000-4000-8000-000000000004', // acme's admin, in no group
  erin: '0c000000-0000-4000-8000-000000000005', // globex's admin
  gt06: '0d000000-0000-4000-8000-000000000001',
  bare: '0d000000-0000-4000-8000-000000000002',
  engineStop: '0e000000-0000-4000-8000-000000000001',
  setApn: '0e000000-0000-4000-8000-000000000002',
  truck1: '0f000000-0000-4000-8000-000000000001', // trucks, moving
  truck2: '0f000000-0000-4000-8000-000000000002', // trucks + vans, stopped
  van1: '0f000000-0000-4000-8000-000000000003', // vans, never reported
  unlinked: '0f000000-0000-4000-8000-000000000004', // trucks, unlink
  globexCar: '0f000000-0000-4000-8000-000000000005',
}
export const ids: { readonly [K in keyof typeof idValues]: string } = idValues

export const keys = {
  alice: 'alice-key-0123456789abcdef',
  bob: 'bob-key-0123456789abcdef',
  carol: 'carol-key-0123456789abcdef',
  dana: 'dana-key-0123456789abcdef',
  erin: 'erin-key-0123456789abcdef',
}

export function baseDataset() {
  return {
    accounts: [
      { id: ids.acme, name: 'Acme Logistics' },
      { id: ids.globex, name: 'Globex' },
    ],
    groups: [
      { id: ids.trucks, account: ids.acme, name: 'Trucks' },
      { id: ids.vans, account: ids.acme, name: 'Vans' },
      { id: ids.globexGroup, account: ids.globex, name: 'Cars' },
    ],
    users: [
      { id: ids.alice, account: ids.acme, name: 'alice', groups: [ids.trucks, ids.vans], api_keys: [keys.alice] },
      { id: ids.bob, account: ids.acme, name: 'bob', groups: [ids.vans], api_keys: [keys.bob] },
      { id: ids.carol, account: ids.globex, name: 'carol', groups: [ids.globexGroup], api_keys: [keys.carol] },
      { id: ids.dana, account: ids.acme, name: 'dana', role: 'admin', groups: [] as string[], api_keys: [keys.dana] },
      { id: ids.erin, account: ids.globex, name: 'erin', role: 'admin', groups: [] as string[], api_keys: [keys.erin] },
    ],
    models: [
      {
        id: ids.gt06,
        name: 'GT06N',
        protocol: 'gt06',
        commands: [
          { id: ids.engineStop, name: 'Engine stop', widget: { type: 'button', label: 'Stop engine', confirm: true, confirm_message: 'The vehicle will stop. Continue?' } },
          {
            id: ids.setApn,
            name: 'Set APN',
            widget: { type: 'form', fields: [{ name: 'apn', type: 'text', label: 'APN' }, { name: 'password', type: 'password', label: 'Password' }] },
          },
        ],
      },
      { id: ids.bare, name: 'Bare', protocol: 'osmand' },
    ],
    devices: [
      {
        id: ids.truck1, account: ids.acme, model: ids.gt06, groups: [ids.trucks], alias: 'Truck 1', properties: { plate: 'AB-123-CD' },
        serial: 'S-T1', imei: '359710049095001', iccid: '8934071179000000001', state: 'moving', location: [48.8566, 2.3522],
        connected: true, connected_at: '2026-11-01T08:00:00Z', created_at: '2026-01-01T00:00:00Z', updated_at: '2026-11-01T18:00:00Z',
      },
      {
        id: ids.truck2, account: ids.acme, model: ids.gt06, groups: [ids.trucks, ids.vans], alias: 'Truck 2', properties: {},
        serial: 'S-T2', imei: '359710049095002', iccid: '', state: 'stopped', location: [45.75, 4.85], connected: false,
        connected_at: '2026-11-01T08:00:00Z', disconnected_at: '2026-11-01T18:00:00Z',
      },
      { id: ids.van1, account: ids.acme, model: ids.bare, groups: [ids.vans], alias: 'Van 1', serial: 'S-V1', imei: '359710049095003', state: 'new' },
      { id: ids.unlinked, account: ids.acme, model: ids.gt06, groups: [ids.trucks], alias: 'Old truck', serial: 'S-OLD', imei: '359710049095004', state: 'unlink' },
      { id: ids.globexCar, account: ids.globex, model: ids.bare, groups: [ids.globexGroup], alias: 'Car', serial: 'S-C', imei: '359710049095005', state: 'off' },
    ],
  }
}

export interface World {
  dir: string
  database: DatabaseHandle
  clock: ReturnType<typeof manualClock>
  app: ReturnType<typeof createApp>
  /** GET/POST/… with an optional bearer token, through app.handle */
  call(method: string, path: string, options?: { token?: string; body?: unknown; headers?: Record<string, string> }): Promise<Response>
  close(): void
}

export function makeWorld(dataset: object = baseDataset(), deps: Partial<AppDeps> = {}): World {
  const dir = mkdtempSync(join(tmpdir(), 'tracker-test-'))
  const database = openDatabase(join(dir, 'tracker.db'))
  importNow(database, dataset)
  const clock = manualClock()
  const app = createApp({ database, clock, ...deps })
  return {
    dir,
    database,
    clock,
    app,
    call: caller(app),
    close() {
      database.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A world's `call`: a request through `app.handle`, with a bearer token and a JSON body when given. */
export function caller(app: ReturnType<typeof createApp>): World['call'] {
  return (method, path, { token, body, headers = {} } = {}) => {
    const init: RequestInit = { method, headers: { ...headers } }
    if (token !== undefined) (init.headers as Record<string, string>).authorization = `Bearer ${token}`
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body)
      ;(init.headers as Record<string, string>)['content-type'] ??= 'application/json'
    }
    return app.handle(new Request(`http://localhost${path}`, init))
  }
}

/** how soon another node's access change reaches a node on PostgreSQL (contracts/scale-out.md: within 1 s) */
const ANNOUNCEMENT_BOUND_MS = 1000

/** The engine the tests run on: TRACKER_TEST_ENGINE=postgres (npm run test:pg), else SQLite. */
export const testEngine: 'sqlite' | 'postgres' = process.env.TRACKER_TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite'

/** The world on either engine: nothing of the database itself, only the stores the app is made over. */
export interface EngineWorld {
  engine: 'sqlite' | 'postgres'
  /** SQLite's file and connection, for the few tests of SQLite itself; null on PostgreSQL */
  sqlite: Pick<World, 'dir' | 'database'> | null
  /** the variables that point a command (`tracker import`, …) or another server at the world's database: DATABASE_PATH or DATABASE_URL */
  env: Record<string, string>
  /** the stores the app is made over */
  stores: Stores
  clock: ReturnType<typeof manualClock>
  app: ReturnType<typeof createApp>
  call: World['call']
  /** another set of stores over the world's own connection, with caches of their own (createApp({ database }) on SQLite) */
  storesBeside(clock?: Clock): Stores
  /**
   * another set of stores over the same database, on a connection of its own (SQLite: another
   * connection to the file; PostgreSQL: another pool, with its own LISTEN), with caches of their
   * own: another server process's or a command's. Closed with the world.
   */
  otherStores(clock?: Clock): Promise<Stores>
  /** imports more through the real dataset import, on the world's engine */
  importMore(document: unknown, options?: ImportOptions): Promise<ImportSummary>
  /**
   * Runs a fixture statement on the world's own connection, in SQL both engines read alike (a
   * Drizzle `sql` template: plain UPDATE/DELETE/SELECT on column names), and answers its rows: for
   * the few things a test sets up that no API or import writes. A write here is this node's (its
   * access counters are read again, as after its own units of work).
   */
  execute<Row = Record<string, unknown>>(query: SQL): Promise<Row[]>
  /**
   * execute, on a connection of its own that is closed after it: another process's write (SQLite:
   * another connection to the file; PostgreSQL: another session, as another node or the CLI,
   * resolved once the world's node has heard its announcement: within 1 s, as the contract says)
   */
  executeElsewhere(query: SQL): Promise<void>
  /**
   * Runs `work` that changes the database from another process (`tracker import`, a command of
   * the CLI) and resolves once the world's node has been told of it: at once on SQLite; on
   * PostgreSQL once its announcement arrived, within 1 s as the contract says.
   */
  elsewhere(work: () => unknown): Promise<void>
  /** how many rows a table holds (optionally: a WHERE condition as a `sql` template) */
  count(table: string, where?: SQL): Promise<number>
  /** a device's internal key (what live fixes and ingest name it by) */
  deviceKey(id: string): Promise<number>
  /**
   * Runs `work` (synchronous, as the alert rules are) inside one committed unit of the world's
   * ingest store for these devices, as the pipeline runs its batches: on PostgreSQL the unit reads
   * ahead what the rules will ask (the devices' accounts' geofences) before `work` runs.
   */
  ingestUnit<T>(deviceKeys: number[], work: () => T): Promise<T>
  /** closes the database (on PostgreSQL: drops it) */
  close(): Promise<void>
}

/** How many rows a table holds (optionally: a WHERE condition), over a world's or a server database's `execute`: the same statement on both engines. */
export function rowCounter(execute: <Row>(query: SQL) => Promise<Row[]>): (table: string, where?: SQL) => Promise<number> {
  return async (table, where) => {
    const [row] = await execute<{ n: number }>(sql`SELECT count(*) AS n FROM ${sql.raw(table)}${where ? sql` WHERE ${where}` : sql``}`)
    return Number(row!.n)
  }
}

/** count, deviceKey and ingestUnit, over execute and the stores: the same on both engines */
function readers(execute: EngineWorld['execute'], stores: Stores, clock: Clock): Pick<EngineWorld, 'count' | 'deviceKey' | 'ingestUnit'> {
  return {
    ingestUnit: (deviceKeys, work) => stores.ingest.commit(() => work(), { clock, touches: () => ({ devices: deviceKeys, fixes: [], alarms: [] }) }),
    count: rowCounter(execute),
    async deviceKey(id) {
      const [row] = await execute<{ key: number }>(sql`SELECT key FROM devices WHERE id = ${id}`)
      if (!row) throw new Error(`no device ${id}`)
      return Number(row.key)
    },
  }
}

/**
 * makeWorld on the run's engine. On PostgreSQL: a fresh database copied from the migrated
 * template (test/support/postgres.ts), the dataset imported through its dataset store, the app
 * made over its stores. Like makeWorld's SQLite file, it holds no built-in models (makeWorld opens
 * with db/client's openDatabase, which runs no afterMigrate): both engines start from the same rows.
 */
export async function openWorld(dataset: object = baseDataset(), deps: Partial<AppDeps> = {}): Promise<EngineWorld> {
  const clock = manualClock()
  if (testEngine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tracker-test-'))
    const database = openDatabase(join(dir, 'tracker.db'))
    importNow(database, dataset)
    // the stores createApp({ database, clock }) would make, kept for the test
    const stores = createSqliteStores(database, { clock })
    const execute = async <Row>(query: SQL) => database.db.all(query) as Row[]
    const others: DatabaseHandle[] = []
    const app = createApp({ stores, clock, ...deps })
    return {
      engine: 'sqlite',
      sqlite: { dir, database },
      env: { DATABASE_PATH: join(dir, 'tracker.db') },
      stores,
      clock,
      app,
      call: caller(app),
      storesBeside: (otherClock = clock) => createSqliteStores(database, { clock: otherClock }),
      async otherStores(otherClock = clock) {
        const other = openDatabase(join(dir, 'tracker.db'))
        others.push(other)
        return createSqliteStores(other, { clock: otherClock })
      },
      importMore: async (document, options) => importNow(database, document, options),
      execute,
      // SQLite: every request reads the file's version, so another process's commit is seen by the next one
      elsewhere: async (work) => void (await work()),
      async executeElsewhere(query) {
        const other = new Database(join(dir, 'tracker.db'))
        try {
          drizzleSqlite(other).run(query)
        } finally {
          other.close()
        }
      },
      ...readers(execute, stores, clock),
      async close() {
        for (const other of others) other.close()
        database.close()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  }
  const fresh = await freshPostgres()
  try {
    // the template is migrated already
    const handle = await openPostgres(fresh.url, { poolSize: 4, migrate: false })
    try {
      await importDataset(createPostgresStores(handle).dataset, dataset)
      const stores = createPostgresStores(handle, { clock })
      // a write on the world's own pool, as this node's units of work are (src/store/postgres/unit.ts):
      // its access counters are read again on their next use
      const execute = async <Row>(query: SQL) => {
        try {
          return [...(await handle.db.execute(query))] as Row[]
        } finally {
          handle.versions.changed()
        }
      }
      const elsewhere: EngineWorld['elsewhere'] = async (work) => {
        // another node's change reaches this one within 1 s (its trigger's announcement): the
        // work is done once the world's node has been told, or that second has passed
        let told: () => void = () => {}
        const announced = new Promise<void>((resolve) => (told = resolve))
        const stopListening = handle.versions.onChange(() => told())
        try {
          await work()
          await Promise.race([announced, Bun.sleep(ANNOUNCEMENT_BOUND_MS)])
        } finally {
          stopListening()
        }
      }
      const others: PostgresHandle[] = []
      const app = createApp({ stores, clock, ...deps })
      return {
        engine: 'postgres',
        sqlite: null,
        env: { DATABASE_URL: fresh.url },
        stores,
        clock,
        app,
        call: caller(app),
        storesBeside: (otherClock = clock) => createPostgresStores(handle, { clock: otherClock }),
        async otherStores(otherClock = clock) {
          const other = await openPostgres(fresh.url, { poolSize: 2, migrate: false })
          others.push(other)
          return createPostgresStores(other, { clock: otherClock })
        },
        importMore: (document, options) => importDataset(createPostgresStores(handle).dataset, document, options),
        execute,
        elsewhere,
        async executeElsewhere(query) {
          const other = postgres(fresh.url, { max: 1, onnotice: () => {} })
          try {
            await elsewhere(() => drizzlePostgres(other).execute(query))
          } finally {
            await other.end({ timeout: 5 })
          }
        },
        ...readers(execute, stores, clock),
        async close() {
          for (const other of others) await other.close()
          await handle.close()
          await fresh.drop()
        },
      }
    } catch (error) {
      await handle.close()
      throw error
    }
  } catch (error) {
    await fresh.drop()
    throw error
  }
}

/** Asserts an RFC 9457 body and returns it. */
export async function problem(response: Response, status: number) {
  const body = (await response.json()) as { type: string; title: string; status: number; detail: string; errors?: { path: string; message: string }[] }
  if (response.status !== status) throw new Error(`expected ${status}, got ${response.status}: ${JSON.stringify(body)}`)
  if (response.headers.get('content-type') !== 'application/problem+json') throw new Error(`content-type ${response.headers.get('content-type')}`)
  if (body.status !== status || typeof body.title !== 'string' || typeof body.detail !== 'string' || typeof body.type !== 'string') {
    throw new Error(`not a problem body: ${JSON.stringify(body)}`)
  }
  return body
}
