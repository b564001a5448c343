/**
 * `cli backup FILE`: a consistent copy of the live database with `VACUUM INTO`, safe while the
 * server serves and ingests. It reads one snapshot (WAL: writers go on meanwhile; the WAL just
 * cannot be checkpointed past that snapshot until the copy ends), writes a compact file next to
 * the target, checks it, syncs it, and only then renames it into place, so FILE is either a
 * complete, checked backup or absent.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { Invalid, NotFound } from '../errors'
import { integrityOfFile, type MaintenanceStore } from '../store/maintenance'

export interface BackupResult {
  path: string
  bytes: number
  /** milliseconds copying, and checking the copy */
  copyMs: number
  checkMs: number
}

/** The copy failed its integrity check: it is removed, and the source should be looked at. */
export class BackupCorrupt extends Error {}

/** Copy the database to `target`; refuses to overwrite. */
export async function backupDatabase(database: Pick<MaintenanceStore, 'copyTo'>, target: string): Promise<BackupResult> {
  const path = resolve(target)
  if (existsSync(path)) throw new Invalid(`${target} already exists; choose a new file name (backups are never overwritten)`)
  mkdirSync(dirname(path), { recursive: true })
  const partial = `${path}.partial-${process.pid}`
  rmSync(partial, { force: true })
  try {
    const copyStarted = performance.now()
    await database.copyTo(partial)
    const copyMs = performance.now() - copyStarted

    const checkStarted = performance.now()
    const integrity = await integrityOfFile(partial)
    if (integrity !== 'ok') throw new BackupCorrupt(`the copy failed its integrity check: ${integrity.slice(0, 500)}`)
    const checkMs = performance.now() - checkStarted

    // VACUUM INTO does not sync its output: make the bytes durable before the name appears
    const fd = openSync(partial, 'r')
    try {
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(partial, path)
    return { path, bytes: statSync(path).size, copyMs, checkMs }
  } finally {
    rmSync(partial, { force: true })
  }
}

/** For the command line: the database must already exist (a backup never creates one). */
export function requireDatabaseFile(path: string): void {
  if (path === ':memory:' || !existsSync(path)) throw new NotFound(`No database at ${path} (set DATABASE_PATH)`)
}
