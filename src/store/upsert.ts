/**
 * An upsert's SET clause: each column takes the value the conflicting insert carried
 * (`excluded.<column>`, SQLite's and PostgreSQL's shared spelling). Column names as in SQL, which
 * the big tables' schema also uses as property names.
 */
import { sql, type SQL } from 'drizzle-orm'

export function fromExcluded<C extends string>(...columns: C[]): Record<C, SQL> {
  return Object.fromEntries(columns.map((column) => [column, sql.raw(`excluded.${column}`)])) as Record<C, SQL>
}
