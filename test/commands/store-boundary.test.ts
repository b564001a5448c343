/**
 * The command queue, the command service and the model admin hold no SQL (#21): their tables are
 * store/commands.ts's and store/models.ts's, so that another engine's adapter can sit behind the
 * same signatures. They import neither bun:sqlite nor Drizzle's query builders, and call no
 * statement or transaction on a connection.
 */
import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const SRC = join(import.meta.dir, '../../src')
const files = [
  ...readdirSync(join(SRC, 'commands'))
    .filter((name) => name.endsWith('.ts'))
    .map((name) => `commands/${name}`),
  'admin/models.ts',
  'admin/models-routes.ts',
  'admin/models-model.ts',
]

/** what only a store (or db/) may do */
const FORBIDDEN: [string, RegExp][] = [
  ['imports bun:sqlite', /from ['"]bun:sqlite['"]/],
  ['imports a Drizzle query builder', /from ['"]drizzle-orm(\/[^'"]*)?['"]/],
  ['imports the schema', /from ['"][./]*db\/schema['"]/],
  ['runs a statement or a transaction', /\.(prepare|query|exec|run|transaction)\(/],
]

describe('the commands and models area holds no SQL', () => {
  test.each(files)('%s', (file) => {
    const text = readFileSync(join(SRC, file), 'utf8')
    expect(FORBIDDEN.filter(([, pattern]) => pattern.test(text)).map(([what]) => what)).toEqual([])
  })

  test('the queue and the model admin are among the files read', () => {
    expect(files).toContain('commands/queue.ts')
    expect(files).toContain('commands/service.ts')
    expect(files).toContain('commands/catalogue.ts')
  })
})
