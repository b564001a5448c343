/**
 * The house's layering, read from the source (#21): the bottom layers import nothing above them,
 * and SQL lives in db/ and src/store/. The files that still hold SQL are listed by name while
 * they move into stores; the list may only shrink (an entry that no longer holds SQL fails too,
 * so the list stays true).
 */
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { closureOf, ROOT, runtimeImports, sourceFiles } from './imports'

/** what the bottom layers may reach at run time: themselves and a few leaves (no I/O, no app) */
const BOTTOM = /^(db\/|src\/track\/|src\/store\/|src\/config\.ts$|src\/http\/addresses\.ts$|src\/clock\.ts$|src\/errors\.ts$|src\/log\.ts$)/

/** a statement on a connection: prepare/query/transaction on anything, exec/run on a connection's usual names */
const RAW_CALL = /(?:\.(?:prepare|query|transaction)\s*[<(])|(?:\b(?:sqlite|db|tx|trx|database|connection|conn|handle)\s*\.\s*(?:exec|run)\s*[<(])/
const BUN_SQLITE = /from\s+['"]bun:sqlite['"]/
/** builds queries: Drizzle's operators or the tables themselves */
const QUERY_BUILDING = /from\s+['"](?:drizzle-orm[^'"]*|(?:\.\.\/)+db\/schema)['"]/

/** what still holds SQL outside db/ and src/store/, until it moves into a store */
const STILL_MOVING = new Set([
  'src/admin/accounts.ts',
  'src/admin/audit.ts',
  'src/admin/groups.ts',
  'src/admin/index.ts',
  'src/admin/keys.ts',
  'src/admin/me.ts',
  'src/admin/models.ts',
  'src/admin/users.ts',
  'src/alerts/cache.ts',
  'src/alerts/delivery.ts',
  'src/alerts/email-alerts-service.ts',
  'src/alerts/notifications-service.ts',
  'src/alerts/notifications.ts',
  'src/alerts/outbox.ts',
  'src/alerts/rules.ts',
  'src/alerts/service.ts',
  'src/cli/admin.ts',
  'src/cli/models.ts',
  'src/cli/resolve.ts',
  'src/commands/catalogue.ts',
  'src/commands/queue.ts',
  'src/commands/service.ts',
  'src/dataset/service.ts',
  'src/demo.ts',
  'src/keys/service.ts',
  'src/main.ts',
  'src/ops/backup.ts',
  'src/ops/health.ts',
  'src/ops/index.ts',
  'src/ops/retention.ts',
  'src/ops/server-metrics.ts',
  'src/server.ts',
  'src/session/service.ts',
  'src/session/setup.ts',
  'src/share/creators.ts',
  'src/share/service.ts',
  'src/share/tokens.ts',
])

function holdsSql(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8')
  const why: string[] = []
  if (BUN_SQLITE.test(text)) why.push('imports bun:sqlite')
  const raw = text.split('\n').filter((line) => RAW_CALL.test(line)).length
  if (raw) why.push(`${raw} statement(s) on a connection`)
  if (QUERY_BUILDING.test(text)) why.push('builds queries (drizzle-orm or db/schema)')
  return why
}

describe('layers point down', () => {
  test('config.ts, db/, track/ and store/ reach nothing above them at run time', () => {
    const reached: Record<string, string[]> = {}
    for (const file of ['src/config.ts', ...sourceFiles('db', 'src/track', 'src/store')]) {
      const above = [...closureOf(file)].filter((target) => !BOTTOM.test(target))
      if (above.length) reached[file] = above.sort()
    }
    expect(reached).toEqual({})
  })

  test('no import circle runs through config.ts, counting type-only imports', () => {
    const circles = runtimeImports('src/config.ts', true).filter((target) => closureOf(target, true).has('src/config.ts'))
    expect(circles).toEqual([])
  })
})

describe('SQL lives in db/ and src/store/', () => {
  const outside = sourceFiles('src').filter((file) => !file.startsWith('src/store/') && !file.startsWith('src/console/app/'))
  const holding = Object.fromEntries(outside.map((file) => [file, holdsSql(file)]).filter(([, why]) => why.length > 0))

  test('no file outside them holds SQL but those still moving', () => {
    expect(Object.keys(holding).filter((file) => !STILL_MOVING.has(file))).toEqual([])
  })

  test('each file still listed as moving does hold SQL (the list only shrinks)', () => {
    expect([...STILL_MOVING].filter((file) => !(file in holding))).toEqual([])
  })
})
