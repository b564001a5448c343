/**
 * Another process holding the database's write lock, as an import or an `sqlite3` shell does:
 * `bun test/support/hold-write-lock.ts DB` takes it (BEGIN IMMEDIATE), prints "locked", and
 * keeps it until a line arrives on stdin (or stdin closes); then it commits and prints "released".
 */
import { Database } from 'bun:sqlite'

const path = process.argv[2]
if (!path) throw new Error('usage: hold-write-lock.ts DATABASE')
const db = new Database(path)
db.run('PRAGMA busy_timeout = 5000')
db.run('BEGIN IMMEDIATE')
console.log('locked')
for await (const _ of console) break
db.run('COMMIT')
db.close()
console.log('released')
