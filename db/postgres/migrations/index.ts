/**
 * PostgreSQL's migrations as text, embedded as db/migrations/index.ts embeds SQLite's. Its own
 * numbered history (0000 is the schema as the SQLite build had it at migration 0018).
 * `npx drizzle-kit generate --config drizzle.postgres.config.ts --name <tag>` writes the next one
 * from db/postgres/schema.ts; add the file here (test/db/postgres-schema.test.ts checks).
 */
import journal from './meta/_journal.json'
import init from './0000_init.sql' with { type: 'text' }
import userTimezone from './0001_user_timezone.sql' with { type: 'text' }
import reportSchedules from './0002_report_schedules.sql' with { type: 'text' }

export const migrationFiles: Record<string, string> = {
  '0000_init': init,
  '0001_user_timezone': userTimezone,
  '0002_report_schedules': reportSchedules,
}

export const migrationJournal: { entries: { idx: number; when: number; tag: string; breakpoints: boolean }[] } = journal
