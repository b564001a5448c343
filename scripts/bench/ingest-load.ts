/**
 * Load generators for the ingest benchmark, run as a second process. Prints one JSON line.
 *
 *   bun ingest-load.ts osmand URL CONNECTIONS SECONDS DEVICE_PREFIX DEVICES
 *     autocannon; each request a new fix (its own device and timestamp), like phones reporting
 *   bun ingest-load.ts teltonika PORT CONNECTIONS SECONDS IMEI_BASE
 *     one device per connection: handshake, then 10-record Codec 8 packets, each waiting for
 *     its ACK (as a real device does), fixes counted only when acknowledged
 */
import autocannon from 'autocannon'
import { teltonikaImei, teltonikaPacket } from '../../test/ingest/frames'

const [mode, target, connectionsArg, secondsArg, prefix, devicesArg] = process.argv.slice(2)
const connections = Number(connectionsArg)
const seconds = Number(secondsArg)
/** fix timestamps start a week ago, one second apart per device: never in the future */
const startSeconds = Math.floor(Date.now() / 1000) - 7 * 86_400

if (mode === 'osmand') {
  const devices = Number(devicesArg)
  let n = 0
  const result = await autocannon({
    url: target,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'GET',
        setupRequest: (request: { path: string }) => {
          const i = n++
          const device = i % devices
          const ts = startSeconds + Math.floor(i / devices)
          request.path = `/?id=${prefix}${device}&lat=${(52.6 + (i % 1000) * 1e-5).toFixed(6)}&lon=-8.63&timestamp=${ts}&speed=12.5&bearing=90&altitude=20&batt=87`
          return request
        },
      },
    ],
  })
  console.log(
    JSON.stringify({ requestsPerSecond: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors, non2xx: result.non2xx, total: result.requests.total }),
  )
} else if (mode === 'teltonika') {
  const port = Number(target)
  const imeiBase = Number(prefix)
  const deadline = performance.now() + seconds * 1000
  let fixes = 0
  let packets = 0
  let failures = 0

  const device = (index: number) =>
    new Promise<void>((resolve) => {
      let received = 0
      let expecting = 1
      let record = 0
      const sendPacket = (socket: { write(b: Uint8Array): number }) => {
        const records = Array.from({ length: 10 }, (_, i) => ({
          timestampMs: (startSeconds + record + i) * 1000,
          latitude: 54.6872 + ((record + i) % 500) * 1e-5,
          longitude: 25.2797,
          altitude: 112,
          angle: 45,
          satellites: 11,
          speed: 42,
          io1: { 239: 1, 240: 1, 21: 4 },
          io2: { 66: 12_800 },
          io4: { 16: 123_456 + record },
        }))
        record += 10
        expecting = 4
        received = 0
        socket.write(teltonikaPacket(records))
      }
      Bun.connect({
        hostname: '127.0.0.1',
        port,
        socket: {
          binaryType: 'uint8array',
          open(socket) {
            socket.write(teltonikaImei(String(imeiBase + index)))
          },
          data(socket, chunk) {
            received += chunk.length
            if (received < expecting) return
            if (expecting === 1 && chunk[0] !== 1) {
              failures++
              socket.end()
              return
            }
            if (expecting === 4) {
              packets++
              fixes += 10
            }
            if (performance.now() >= deadline) return void socket.end()
            sendPacket(socket)
          },
          close() {
            resolve()
          },
          error() {
            failures++
          },
        },
      }).catch(() => {
        failures++
        resolve()
      })
    })

  const started = performance.now()
  await Promise.all(Array.from({ length: connections }, (_, i) => device(i)))
  const elapsed = (performance.now() - started) / 1000
  console.log(JSON.stringify({ fixesPerSecond: fixes / elapsed, fixes, packets, failures, seconds: elapsed }))
} else {
  console.error('usage: ingest-load.ts osmand|teltonika …')
  process.exit(2)
}
