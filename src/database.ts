/**
 * The database as the product opens it: db/client's openDatabase (created, migrated), and right
 * after the migrations the built-in models brought up to date (commands/catalogue.ts), so that the
 * server, `migrate`, an import and every other command find the catalogue as this version
 * declares it. A database opened without migrating (a backup) is left as it is.
 */
import { type DatabaseHandle, openDatabase, type OpenOptions } from '../db/client'
import { ensureBuiltinModels } from './commands/catalogue'

export function openProductDatabase(path: string, options: Omit<OpenOptions, 'afterMigrate'> & { nowMs?: number } = {}): DatabaseHandle {
  return openDatabase(path, { ...options, afterMigrate: (db) => ensureBuiltinModels(db, options.nowMs ?? Date.now()) })
}
