/**
 * Fixtures: a dataset imported at once, for tests that build their database synchronously
 * (makeWorld and the like). The SQLite store settles its promise before it returns (it is
 * synchronous inside), so its outcome can be read without waiting: a pending one would be a bug.
 */
import type { DatabaseHandle } from '../../db/client'
import { importDataset, type ImportOptions, type ImportSummary } from '../../src/dataset/service'
import { createDatasetStore } from '../../src/store/dataset'

export function importNow(database: DatabaseHandle, document: unknown, options?: ImportOptions): ImportSummary {
  const outcome = importDataset(createDatasetStore(database), document, options)
  outcome.catch(() => {})
  const status = Bun.peek.status(outcome)
  if (status === 'pending') throw new Error('the SQLite dataset store left its import pending')
  const value = Bun.peek(outcome)
  if (status === 'rejected') throw value
  return value as ImportSummary
}
