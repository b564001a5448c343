/**
 * The house's layering, read from the source (#21): the bottom layers import nothing above them,
 * and SQL lives in db/ and src/store/ only (the composition in src/server.ts, src/app.ts and
 * src/main.ts hands the database handle to the stores it builds, and runs no statement itself).
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
  test('no file outside them imports bun:sqlite, runs a statement on a connection, or builds a query', () => {
    const outside = sourceFiles('src').filter((file) => !file.startsWith('src/store/') && !file.startsWith('src/console/app/'))
    const holding = Object.fromEntries(outside.map((file) => [file, holdsSql(file)]).filter(([, why]) => why.length > 0))
    expect(holding).toEqual({})
  })
})
