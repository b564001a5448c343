/** Running the real server as a child process: ports, its JSON log lines on stderr, waiting for them. */
import type { Subprocess } from 'bun'
import { PROTOCOLS } from '../../src/ingest/protocols'
import type { ServerDatabase } from './server-database'

/** ports this process has handed out: never twice */
const handedOut = new Set<number>()

/**
 * A port free now on 127.0.0.1, for a server a test starts a moment later. Drawn below Linux's
 * ephemeral range (32768–60999): a port the kernel gave for probing comes from that range, and
 * in the moment before the server binds it, an outgoing connection of another test could be
 * given the same one as its local port (a full run once saw "port … is already in use").
 */
export function freePort(): number {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    if (handedOut.has(port)) continue
    try {
      const probe = Bun.listen({ hostname: '127.0.0.1', port, socket: { data() {} } })
      probe.stop(true)
    } catch {
      continue
    }
    handedOut.add(port)
    return port
  }
  throw new Error('no free port found between 20000 and 32000')
}

export interface ServerProcess {
  child: Subprocess<'ignore', 'pipe', 'pipe'>
  /** every stderr line so far, parsed when it is JSON */
  lines: Record<string, unknown>[]
  /** stderr as text, for failure messages */
  text(): string
  /** the first log line matching, waiting for it */
  waitFor(predicate: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>
  /** SIGTERM, then the exit code */
  terminate(signal?: NodeJS.Signals): Promise<number>
}

export function spawnServer(cmd: string[], options: { cwd: string; env: Record<string, string | undefined> }): ServerProcess {
  const child = Bun.spawn(cmd, { cwd: options.cwd, env: options.env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const lines: Record<string, unknown>[] = []
  let raw = ''
  const pump = (async () => {
    const decoder = new TextDecoder()
    let pending = ''
    const reader = child.stderr.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      const text = decoder.decode(value, { stream: true })
      raw += text
      pending += text
      let newline: number
      while ((newline = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, newline)
        pending = pending.slice(newline + 1)
        try {
          lines.push(JSON.parse(line))
        } catch {
          lines.push({ raw: line })
        }
      }
    }
  })()
  // drain stdout so the child never blocks on a full pipe
  void new Response(child.stdout).arrayBuffer()
  return {
    child,
    lines,
    text: () => raw,
    async waitFor(predicate, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const found = lines.find(predicate)
        if (found) return found
        if (child.exitCode !== null || Date.now() > deadline) {
          await Promise.race([pump, Bun.sleep(100)])
          const late = lines.find(predicate)
          if (late) return late
          throw new Error(`log line not seen (exit ${child.exitCode}); stderr:\n${raw.slice(-3000)}`)
        }
        await Bun.sleep(10)
      }
    },
    async terminate(signal = 'SIGTERM') {
      child.kill(signal)
      const code = await child.exited
      await pump
      return code
    },
  }
}

/**
 * Every device protocol's port variable at 0 (its listener off): a test that starts a server puts
 * this first and sets the ports it listens on after it, so a protocol added to the list never
 * binds its default port in a test that does not know it.
 */
export function devicePortsOff(): Record<string, string> {
  return Object.fromEntries(PROTOCOLS.map((protocol) => [protocol.portVariable, '0']))
}

/** The environment of a server under test: loopback only, its own database (a SQLite path, or a ServerDatabase on the run's engine) and ports, every device protocol off but OsmAnd's and Teltonika's. */
export function serverEnv(
  database: string | Pick<ServerDatabase, 'env'>,
  ports: { http: number; osmand: number; teltonika: number },
  logLevel: 'error' | 'info',
): Record<string, string | undefined> {
  return {
    ...process.env,
    ...(typeof database === 'string' ? { DATABASE_PATH: database } : database.env),
    HOST: '127.0.0.1',
    PORT: String(ports.http),
    // a protocol added to the list is off here, not on its default port
    ...devicePortsOff(),
    OSMAND_PORT: String(ports.osmand),
    TELTONIKA_PORT: String(ports.teltonika),
    LOG_LEVEL: logLevel,
  }
}

/** The repository's root, where src/main.ts is. */
const ROOT = new URL('../..', import.meta.url).pathname

export interface CliRun {
  code: number
  stdout: string
  stderr: string
}

/**
 * The command line as an operator runs it (`tracker <args>`), in a child process, waiting for it:
 * quiet logs, `cwd`, the variables in `env` (DATABASE_PATH above all) and `stdin` if given.
 */
export function runCli(args: string[], options: { cwd: string; env?: Record<string, string>; stdin?: string }): CliRun {
  const result = Bun.spawnSync([process.execPath, `${ROOT}src/main.ts`, ...args], {
    cwd: options.cwd,
    env: { ...process.env, LOG_LEVEL: 'silent', ...options.env },
    stdin: options.stdin === undefined ? 'ignore' : Buffer.from(options.stdin),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() }
}
