/**
 * `npm run bench -- <name>`: runs one benchmark from this folder. Each prints the product
 * against its floor, measured side by side in one run, with absolute figures and the ratio.
 */
const benches: Record<string, string> = {
  alerts: './alerts.ts',
  budgets: './budgets.ts',
  console: './console.ts',
  devices: './devices.ts',
  geofences: './geofences.ts',
  'geofence-points': './geofence-points.ts',
  history: './history.ts',
  signin: './signin.ts',
  ingest: './ingest.ts',
  'pg-drivers': './pg-drivers.ts',
  pg: './pg.ts',
  'report-files': './report-files.ts',
  reports: './reports.ts',
  versions: './versions.ts',
}

const name = process.argv[2]
if (!name || !(name in benches)) {
  console.error(`usage: npm run bench -- <${Object.keys(benches).join('|')}>`)
  process.exit(2)
}
const child = Bun.spawn([process.execPath, new URL(benches[name], import.meta.url).pathname, ...process.argv.slice(3)], {
  stdio: ['inherit', 'inherit', 'inherit'],
})
process.exit(await child.exited)
