/**
 * Text in SQLite's order: SQLite compares text by its bytes (BINARY), which for UTF-8 is code
 * point order; PostgreSQL by the database's collation, which may be linguistic. Every ORDER BY on
 * text in the PostgreSQL adapters goes through this, so pages list in the same order on both
 * engines whatever collation the database was created with.
 */
import { type SQL, sql } from 'drizzle-orm'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'

/** the column (or expression), ascending, compared by code point */
export const byCodePoint = (column: AnyPgColumn | SQL): SQL => sql`${column} COLLATE "C"`
