/**
 * Imported first by the entry point: Elysia reads NODE_ENV once, as it loads, and outside
 * production its validation errors carry an indented copy of the whole offending value (a
 * 40 KB body of nested arrays once made a 2.7 GB message). An operator can still set NODE_ENV.
 */
Bun.env.NODE_ENV ??= 'production'
