/**
 * The real server for `npm run bench -- geofences`, in its own process: startServer with the
 * environment's configuration (DATABASE_PATH, LOG_LEVEL) on free loopback ports, the OsmAnd
 * listener on and the TCP protocols off. Prints "ready <api port> <osmand port>".
 */
import { loadConfig } from '../../src/config'
import { startServer } from '../../src/server'

/** a port free right now on loopback (the bench runs alone on it) */
function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  probe.stop(true)
  return port
}

const osmand = freePort()
const config = loadConfig({ ...process.env, HOST: '127.0.0.1', PORT: '0', OSMAND_PORT: String(osmand), GT06_PORT: '0', TELTONIKA_PORT: '0', H02_PORT: '0', GL200_PORT: '0' })
const server = await startServer(config)
console.log(`ready ${server.port} ${server.ports.osmand}`)
process.on('SIGTERM', () => void server.stop().then(() => process.exit(0)))
