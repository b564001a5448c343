import { defineConfig } from 'drizzle-kit'

// `npm run db:generate` writes a new SQL migration into db/migrations from db/schema.ts.
// Never edit a migration that has landed: migrate() compares timestamps only.
export default defineConfig({
  dialect: 'sqlite',
  schema: './db/schema.ts',
  out: './db/migrations',
})
