/**
 * A webhook receiver for tests: a real HTTP server on 127.0.0.1 (port 0) that records every
 * request and answers as told; it can go down and come back up on the same port.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { createServer, type Server, type Socket } from 'node:net'

export interface Received {
  method: string
  path: string
  headers: Headers
  body: string
  json: Record<string, any>
}

export type Answer = (request: Request, received: Received) => Response | Promise<Response>

export interface Receiver {
  port: number
  /** http://127.0.0.1:<port>/hook */
  url: string
  received: Received[]
  /** how the next requests are answered (default: 204) */
  answer(next: Answer): void
  /** stops listening (connections are refused) */
  down(): void
  /** listens again on the same port */
  up(): void
  stop(): void
}

export function startReceiver(answer: Answer = () => new Response(null, { status: 204 })): Receiver {
  const received: Received[] = []
  let respond = answer
  const serve = (port: number) =>
    Bun.serve({
      port,
      hostname: '127.0.0.1',
      async fetch(request) {
        const body = await request.text()
        let json: Record<string, any> = {}
        try {
          json = JSON.parse(body)
        } catch {}
        const entry = { method: request.method, path: new URL(request.url).pathname, headers: request.headers, body, json }
        received.push(entry)
        return respond(request, entry)
      },
    })
  let server: ReturnType<typeof serve> | null = serve(0)
  const port = server.port!
  return {
    port,
    url: `http://127.0.0.1:${port}/hook`,
    received,
    answer(next) {
      respond = next
    },
    down() {
      server?.stop(true)
      server = null
    },
    up() {
      server ??= serve(port)
    },
    stop() {
      server?.stop(true)
      server = null
    },
  }
}

/** Checks X-Tracker-Signature as a receiver would: recompute the HMAC of "t.body" with node:crypto, compare in constant time. */
export function verifySignature(header: string | null, body: string, secret: string): { ok: boolean; t: number } {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? '')
  if (!match) return { ok: false, t: NaN }
  const expected = createHmac('sha256', secret).update(`${match[1]}.${body}`).digest()
  return { ok: timingSafeEqual(expected, Buffer.from(match[2]!, 'hex')), t: Number(match[1]) }
}

/** A TCP listener on 127.0.0.1 (port 0) that accepts every connection and never answers: a dead receiver. */
export interface Hanging {
  url: string
  /** connections accepted so far */
  readonly accepted: number
  /** drops the connections it holds and stops listening */
  close(): void
}

export async function startHanging(): Promise<Hanging> {
  const sockets = new Set<Socket>()
  let accepted = 0
  const server: Server = createServer((socket) => {
    accepted++
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  return {
    url: `http://127.0.0.1:${port}/hook`,
    get accepted() {
      return accepted
    },
    close() {
      for (const socket of sockets) socket.destroy()
      server.close()
    },
  }
}
