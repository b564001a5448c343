/**
 * `npm run test:pg`: the suite's PostgreSQL run. Needs TEST_DATABASE_URL (a role that may create
 * databases: every test makes its own); runs the tests with TRACKER_TEST_ENGINE=postgres, under
 * which the test world (test/support/world.ts) and the store tests open PostgreSQL.
 *
 * Arguments are passed to `bun test` (a file or a directory to run only that).
 */
import { spawnSync } from 'node:child_process'

if (!process.env.TEST_DATABASE_URL) {
  console.error('npm run test:pg needs TEST_DATABASE_URL, e.g. postgres://tracker:tracker@127.0.0.1:5432/tracker (a role that may create databases)')
  process.exit(2)
}

/** what runs on PostgreSQL: the store tests, the engine's own, the API through the test world, many nodes */
const POSTGRES_SUITE = [
  'test/store/postgres',
  'test/db/postgres.test.ts',
  // the API through the test world's openWorld (test/support/world.ts)
  'test/admin/me.test.ts',
  'test/history/history.test.ts',
  'test/history/gaps.test.ts',
  'test/http/bodies.test.ts',
  'test/http/auth.test.ts',
  'test/http/hostile.test.ts',
  'test/devices/uuid-case.test.ts',
  'test/console/history.test.ts',
  'test/http/forwarded-for.test.ts',
  'test/http/openapi.test.ts',
  'test/session/origin.test.ts',
  'test/session/throttle.test.ts',
  'test/alerts/geofences.test.ts',
  'test/console/console.test.ts',
  'test/events/events.test.ts',
  'test/share/access.test.ts',
  'test/share/page.test.ts',
  'test/admin/models.test.ts',
  'test/devices/devices.test.ts',
  'test/alerts/notifications.test.ts',
  'test/share/links.test.ts',
  'test/admin/devices.test.ts',
  'test/admin/groups.test.ts',
  'test/session/change-password.test.ts',
  'test/ops/http.test.ts',
  'test/ingest/status.test.ts',
  'test/admin/audit.test.ts',
  'test/admin/users.test.ts',
  'test/admin/keys.test.ts',
  'test/session/session.test.ts',
  'test/session/setup.test.ts',
  'test/share/creator.test.ts',
  'test/share/stream.test.ts',
  'test/events/stream.test.ts',
  'test/dataset/events.test.ts',
  'test/dataset/upsert.test.ts',
  'test/dataset/models.test.ts',
  'test/http/problem.test.ts',
  'test/devices/access.test.ts',
  'test/alerts/pipeline-wiring.test.ts',
  'test/dataset/uuid-case.test.ts',
  'test/alerts/email-alerts.test.ts',
  'test/alerts/email-telegram.test.ts',
  'test/alerts/delivery.test.ts',
  'test/ingest/listeners.test.ts',
  'test/alerts/rules.test.ts',
  // the real server (startServer, or `tracker serve` in a child process) on a serverDatabase
  'test/admin/devices-ingest.test.ts',
  'test/admin/devices-unknown.test.ts',
  'test/alerts/connection-events.test.ts',
  'test/alerts/delivery-fairness.test.ts',
  'test/alerts/delivery-server.test.ts',
  'test/alerts/wiring.crash.test.ts',
  'test/alerts/wiring.test.ts',
  'test/commands/delivery.tcp.test.ts',
  'test/devices/homework.test.ts',
  'test/events/device-alarms.test.ts',
  'test/http/hostile-server.test.ts',
  'test/ingest/crash.test.ts',
  'test/ingest/server.test.ts',
  'test/ops/ports.test.ts',
  'test/ops/share-views-stop.test.ts',
  'test/ops/shutdown.test.ts',
  'test/session/first-run.test.ts',
  // in-process, second batch
  'test/alerts/cache-cells.test.ts',
  'test/alerts/limits.test.ts',
  'test/alerts/bounded.test.ts',
  'test/commands/example.test.ts',
  'test/commands/models.test.ts',
  'test/commands/queue.test.ts',
  'test/commands/send.test.ts',
  'test/commands/separators.test.ts',
  'test/commands/tenancy.test.ts',
  'test/dataset/import.test.ts',
  'test/history/limits.test.ts',
  'test/session/demo.test.ts',
  'test/ingest/pipeline.test.ts',
  'test/ops/retention.test.ts',
  // the command line in a child process, on the run's engine (serverDatabase)
  'test/cli/admin.test.ts',
  'test/cli/cli.test.ts',
  'test/cli/models.test.ts',
  // console pages in chromium (one file at a time)
  'test/share/page.browser.test.ts',
  'test/share/page-gaps.browser.test.ts',
  'test/share/page-grants.browser.test.ts',
  'test/session/setup.browser.test.ts',
  // engine-independent (a stand-in pool; the metrics registry): the same on both runs
  'test/db/versions.test.ts',
  'test/ops/metrics.test.ts',
  // (end of the second batch)
  // reports (issue 24): GET /reports/{kind} and the user's time zone, through openWorld
  'test/reports/reports.test.ts',
  'test/reports/timezone.test.ts',
  'test/reports/limits.test.ts',
  // the command line with DATABASE_URL
  'test/cli/postgres.test.ts',
  // two real nodes on one database
  'test/nodes',
]
const args = process.argv.slice(2)
const run = spawnSync(process.execPath, ['test', ...(args.length > 0 ? args : POSTGRES_SUITE)], {
  stdio: 'inherit',
  env: { ...process.env, TRACKER_TEST_ENGINE: 'postgres' },
})
process.exit(run.status ?? 1)
