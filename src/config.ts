/**
 * The environment, read once into a typed, validated config. A bad value stops the process at
 * start with a message naming the variable, rather than surfacing later as a strange failure.
 */
import { hostname } from 'node:os'
import { parseProxyEntry } from './http/addresses'
import { MAX_POLYGON_POINTS } from './track/geofence'

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent'

export interface Config {
  port: number
  host: string
  databasePath: string
  /**
   * DATABASE_URL: postgres:// or postgresql:// (PostgreSQL 15 or newer; many nodes may share it);
   * null: SQLite at databasePath, one process
   */
  databaseUrl: string | null
  /** DATABASE_POOL_SIZE: connections one node opens to PostgreSQL at most */
  databasePoolSize: number
  /** NODE_NAME: this process among the nodes of one database (metrics' `node` label, leases); default the host name */
  nodeName: string
  /** APP_URL, else http://localhost:PORT (share links' base) */
  appUrl: string
  /** whether APP_URL was set: only then is its origin, besides the request's own, one the console may write from */
  appUrlSet: boolean
  shortUrlBase: string
  /**
   * the environment this config was read from: each device protocol's port variable is read from
   * it by the server (ingest/protocols/ports.ts `devicePortsOf`), which knows the protocols; the
   * config does not, so that it imports nothing above it
   */
  env: Readonly<Env>
  logLevel: LogLevel
  /** seconds of silence after which a device counts as disconnected */
  offlineAfter: number
  /** seconds a TCP device connection may go without a complete frame before it is closed */
  tcpIdleTimeout: number
  /** seconds a TCP device connection may stay open without a device logging in */
  tcpLoginTimeout: number
  /** open device TCP connections (every TCP protocol together); more are closed at once */
  tcpMaxConnections: number
  /** open device TCP connections from one IPv4 address or IPv6 /64 */
  tcpMaxConnectionsPerAddress: number
  /** fixes and events older than this many days are refused */
  maxFixAgeDays: number
  /** distinct unknown device identifiers one IPv4 address or IPv6 /64 is told of a minute; past that they are answered as known, their data dropped */
  unknownIdentifiersPerMinute: number
  /** optional Nominatim-compatible reverse geocoder for street addresses */
  geocoderUrl: string | null
  geocoderTimeoutMs: number
  /** minimum ms between two requests to GEOCODER_URL (process-wide); 0: no spacing */
  geocoderIntervalMs: number
  /** requests to GEOCODER_URL waiting for an answer at once (process-wide) */
  geocoderMaxInFlight: number
  tileUrl: string
  /** days of positions and events to keep; null keeps everything */
  retentionDays: number | null
  metricsToken: string | null
  /** WEBHOOK_ALLOW_PRIVATE=1: webhooks may target private, loopback and link-local addresses (tests, on-premise gateways) */
  webhookAllowPrivate: boolean
  /** SMTP_URL: smtp://user:pass@host:587 (STARTTLS when offered) or smtps://…:465; null: no email channels */
  smtpUrl: string | null
  /** SMTP_FROM: the From of notification mails; required with SMTP_URL */
  smtpFrom: string | null
  /** TELEGRAM_API_URL: the Bot API's base, https://api.telegram.org unless set (tests point it at a fake) */
  telegramApiUrl: string
  /** /ready is 503 when the database's file system has fewer MiB free; 0 turns the check off */
  readyMinFreeMb: number
  /** addresses or CIDR ranges of reverse proxies whose X-Forwarded-For is believed (http/client.ts) */
  trustedProxies: string[]
  synchronous: 'NORMAL' | 'FULL'
  /** seconds a command sent to a device may wait to go out before it expires (COMMAND_TTL) */
  commandTtl: number
  /** open live streams of the whole process (MAX_STREAMS); one more is 503 */
  maxStreams: number
  /** active (unexpired, unrevoked) share links one user may have made (MAX_SHARE_LINKS_PER_USER); one more is 409 */
  maxShareLinksPerUser: number
  /** MiB the route and travels requests in flight may hold together (HISTORY_MEMORY_MB); beyond, they wait their turn */
  historyMemoryMb: number
  /** geofences an account may have; creating one more is refused (MAX_GEOFENCES_PER_ACCOUNT) */
  maxGeofencesPerAccount: number
  /** points a geofence's polygon may have, all rings together (MAX_GEOFENCE_VERTICES) */
  maxGeofenceVertices: number
}

export class ConfigError extends Error {}

export type Env = Record<string, string | undefined>

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`)
  }
  return value
}

/** a port variable: an integer from 0 (its listener off) to 65535, `fallback` when unset */
export const readPort = (env: Env, name: string, fallback: number): number => integer(env, name, fallback, 0, 65535)

function url(env: Env, name: string, fallback: string | null): string | null {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  try {
    new URL(raw.replace('{s}', 'a').replace('{z}', '0').replace('{x}', '0').replace('{y}', '0'))
  } catch {
    throw new ConfigError(`${name} must be an absolute URL, got "${raw}"`)
  }
  return raw.replace(/\/+$/, '')
}

/** 1 or true (any case) is on; unset, empty, 0 or false is off; anything else stops the start */
function flag(env: Env, name: string): boolean {
  const raw = (env[name] ?? '').trim().toLowerCase()
  if (raw === '' || raw === '0' || raw === 'false') return false
  if (raw === '1' || raw === 'true') return true
  throw new ConfigError(`${name} must be 1 or 0, got "${env[name]}"`)
}

/** SMTP_URL (smtp: or smtps:, with a host) and SMTP_FROM, which it needs: a relay refuses mail from nobody */
function smtp(env: Env): { smtpUrl: string | null; smtpFrom: string | null } {
  const raw = env.SMTP_URL ?? ''
  const from = (env.SMTP_FROM ?? '').trim()
  if (raw === '') return { smtpUrl: null, smtpFrom: from === '' ? null : from }
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError('SMTP_URL must be an smtp:// or smtps:// URL, e.g. smtp://user:pass@mail.example.com:587')
  }
  if ((parsed.protocol !== 'smtp:' && parsed.protocol !== 'smtps:') || parsed.hostname === '') {
    throw new ConfigError('SMTP_URL must be an smtp:// or smtps:// URL with a host, e.g. smtp://user:pass@mail.example.com:587')
  }
  if (from === '') throw new ConfigError('SMTP_FROM must be set when SMTP_URL is (the From of notification mails, e.g. "Fleet tracker <tracker@example.com>")')
  return { smtpUrl: raw, smtpFrom: from }
}

function proxyList(env: Env, name: string): string[] {
  const entries = (env[name] ?? '').split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
  for (const entry of entries) {
    try {
      parseProxyEntry(entry)
    } catch (error) {
      throw new ConfigError(`${name}: ${(error as Error).message}`)
    }
  }
  return entries
}

/** DATABASE_URL: a postgres:// or postgresql:// URL with a host; unset or empty: SQLite */
function databaseUrl(env: Env): string | null {
  const value = env.DATABASE_URL ?? ''
  if (value === '') return null
  let parsed: URL
  try {
    parsed = new URL(value)
  } catch {
    throw new ConfigError('DATABASE_URL must be a URL such as postgres://user:password@host:5432/database')
  }
  if ((parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') || parsed.hostname === '') {
    throw new ConfigError(`DATABASE_URL must be a postgres:// or postgresql:// URL with a host (got a ${parsed.protocol} URL); leave it unset for SQLite at DATABASE_PATH`)
  }
  return value
}

/** NODE_NAME, else the host name: letters, digits, dot, dash and underscore, at most 64 */
function nodeName(env: Env): string {
  const value = env.NODE_NAME || hostname() || 'node'
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(value)) throw new ConfigError(`NODE_NAME must be 1 to 64 letters, digits, dots, dashes or underscores, got "${value.slice(0, 80)}"`)
  return value
}

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535)
  const appUrl = url(env, 'APP_URL', `http://localhost:${port}`)!
  const logLevel = (env.LOG_LEVEL || 'info') as LogLevel
  if (!['debug', 'info', 'warn', 'error', 'silent'].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of debug, info, warn, error, silent, got "${env.LOG_LEVEL}"`)
  }
  const synchronous = (env.SQLITE_SYNCHRONOUS || 'NORMAL').toUpperCase()
  if (synchronous !== 'NORMAL' && synchronous !== 'FULL') {
    throw new ConfigError(`SQLITE_SYNCHRONOUS must be NORMAL or FULL, got "${env.SQLITE_SYNCHRONOUS}"`)
  }
  const retention = integer(env, 'RETENTION_DAYS', 0, 0, 100_000)
  return {
    port,
    host: env.HOST || '0.0.0.0',
    databasePath: env.DATABASE_PATH || './data/tracker.db',
    databaseUrl: databaseUrl(env),
    databasePoolSize: integer(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
    nodeName: nodeName(env),
    appUrl,
    appUrlSet: (env.APP_URL ?? '') !== '',
    shortUrlBase: url(env, 'SHORT_URL_BASE', `${appUrl}/s`)!,
    env: { ...env },
    logLevel,
    offlineAfter: integer(env, 'OFFLINE_AFTER', 600, 1, 86_400 * 30),
    tcpIdleTimeout: integer(env, 'TCP_IDLE_TIMEOUT', 300, 1, 86_400),
    tcpLoginTimeout: integer(env, 'TCP_LOGIN_TIMEOUT', 30, 1, 3600),
    tcpMaxConnections: integer(env, 'TCP_MAX_CONNECTIONS', 10_000, 1, 1_000_000),
    tcpMaxConnectionsPerAddress: integer(env, 'TCP_MAX_CONNECTIONS_PER_ADDRESS', 100, 1, 1_000_000),
    maxFixAgeDays: integer(env, 'MAX_FIX_AGE_DAYS', 365, 1, 36_500),
    // at most 1,000: each source keeps its refused identifiers' hashes for the minute (10,000 sources at most)
    unknownIdentifiersPerMinute: integer(env, 'UNKNOWN_IDENTIFIERS_PER_MINUTE', 20, 0, 1000),
    geocoderUrl: url(env, 'GEOCODER_URL', null),
    geocoderTimeoutMs: integer(env, 'GEOCODER_TIMEOUT_MS', 1500, 1, 60_000),
    geocoderIntervalMs: integer(env, 'GEOCODER_INTERVAL_MS', 1000, 0, 3_600_000),
    geocoderMaxInFlight: integer(env, 'GEOCODER_MAX_IN_FLIGHT', 2, 1, 64),
    tileUrl: env.TILE_URL || 'https://tile.openstreetmap.org/{z}/{x}/{y}.png',
    retentionDays: retention === 0 ? null : retention,
    metricsToken: env.METRICS_TOKEN || null,
    webhookAllowPrivate: flag(env, 'WEBHOOK_ALLOW_PRIVATE'),
    ...smtp(env),
    telegramApiUrl: url(env, 'TELEGRAM_API_URL', 'https://api.telegram.org')!,
    readyMinFreeMb: integer(env, 'READY_MIN_FREE_MB', 64, 0, 10_000_000),
    trustedProxies: proxyList(env, 'TRUSTED_PROXIES'),
    synchronous,
    commandTtl: integer(env, 'COMMAND_TTL', 86_400, 1, 86_400 * 365),
    maxStreams: integer(env, 'MAX_STREAMS', 2000, 1, 1_000_000),
    maxShareLinksPerUser: integer(env, 'MAX_SHARE_LINKS_PER_USER', 100, 1, 1_000_000),
    historyMemoryMb: integer(env, 'HISTORY_MEMORY_MB', 64, 1, 1_048_576),
    maxGeofencesPerAccount: integer(env, 'MAX_GEOFENCES_PER_ACCOUNT', 1000, 1, 100_000),
    maxGeofenceVertices: integer(env, 'MAX_GEOFENCE_VERTICES', MAX_POLYGON_POINTS, 4, 10_000),
  }
}
