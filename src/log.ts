/**
 * Structured JSON logs, one object a line, at LOG_LEVEL. Callers pass context as fields;
 * nothing here ever receives a key or a token (routes log ids and paths only).
 */
import type { LogLevel } from './config'

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void
  info(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
  /** whether a line at `level` is written: lets a hot path skip building fields nobody reads */
  enabled(level: Exclude<LogLevel, 'silent'>): boolean
}

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }

export function createLogger(level: LogLevel, write: (line: string) => void = (line) => process.stderr.write(line + '\n')): Logger {
  const at = (lvl: Exclude<LogLevel, 'silent'>) => (message: string, fields?: Record<string, unknown>) => {
    if (rank[lvl] < rank[level]) return
    write(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg: message, ...fields }))
  }
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), enabled: (lvl) => rank[lvl] >= rank[level] }
}

export const silentLogger: Logger = createLogger('silent')
