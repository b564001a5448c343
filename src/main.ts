#!/usr/bin/env bun
/**
 * The command line: `serve`, `import FILE [--upsert]`, `key create --user ID`,
 * `migrate`, `backup FILE`, `demo`, `version`. The compiled binary takes the same commands.
 * Exit codes: 0 ok, 1 failure (a port already in use among them: the configuration is valid, the
 * port is taken now), 2 bad input (usage, an invalid dataset, a bad environment).
 */
import './production'
import { DatabaseUnavailable } from '../db/postgres/client'
import { openProduct, type ProductDatabase } from './database'
import { type Config, ConfigError, loadConfig } from './config'
import { DatasetError, importDataset } from './dataset/service'
import { NotJson, parseJsonFile } from './dataset/json'
import { DomainError } from './errors'
import { createLogger } from './log'
import { backupDatabase, requireDatabaseFile } from './ops/backup'
import { stopOnSignals } from './ops/shutdown'
import { adminCommands, ArgumentError, type AdminCommandContext } from './cli/admin'
import { PortInUse, startServer } from './server'
import pkg from '../package.json'
import { PROTOCOLS } from './ingest/protocols'

const USAGE = `Usage: tracker <command>

  serve                      serve the API and the device listeners (what npm start runs)
  import FILE [--upsert]     load a dataset (JSON, format: docs/import-format.md)
  init --account NAME --admin NAME [--password-file F]
                             first run without a browser: the account and its admin
                             (password from standard input, or the file)
  account create --name NAME create an account
  user create --account A --name N [--role admin|member] [--groups G,G] [--password-stdin]
  user passwd N              set a user's password (from standard input); ends their sessions
  user list [--account A]    users (id, name, role, account id, account name)
  key create --user U [--name LABEL]   issue an API key; it is printed once
  key list --user U          a user's keys (id, name, created, last used, expiry)
  key revoke ID              the key fails from the next request
  device add --account A [--model M] (--imei I | --serial S) [--alias X] [--groups G,G]
  device list [--account A]  devices (id, alias, imei, serial, state), by alias
  model list [--account A]   device models (id, name, protocol, built-in / server-wide / account)
  model show M               a model as JSON, as model update --file takes it
  model add --name N [--protocol P] [--commands FILE] [--account A]
                             a server-wide model (or the account's); FILE: its commands (JSON)
  model update M --file F    change a model, server-wide ones included (F: JSON as PATCH /models)
  model delete M             delete a model no device uses
  migrate                    create or migrate the database, then exit
  backup FILE                consistent copy of the live database into FILE (safe while serving)
  version                    print the version
  demo [--speed N] [--exit]  demo fleet: nine real bus recordings (built in) replayed over OsmAnd
                             (N× real time, default 10)

Environment: PORT, HOST, DATABASE_PATH or DATABASE_URL (postgres://…), APP_URL, SHORT_URL_BASE, LOG_LEVEL, … (see README.md)
Device ports (0 turns a listener off): ${PROTOCOLS.map((p) => `${p.portVariable} (${p.title}, default ${p.defaultPort})`).join(', ')}
API reference: /openapi on the running server; its conventions and choices:
docs/api-decisions.md`

class UsageError extends Error {}

type Command = (args: string[], config: Config) => Promise<number>

/** Each command: its arguments in, an exit code out (-1: keep running, the server). */
const COMMANDS: Record<string, Command> = {
  async serve(_args, config) {
    const log = createLogger(config.logLevel)
    // the signals are handled before the server says it serves: a SIGTERM right after "serving"
    // would otherwise find no handler yet and kill the process where it stands
    const starting = startServer(config, { log })
    stopOnSignals(async () => (await starting).stop(), { log })
    await starting
    return -1
  },

  async import(args, config) {
    const file = args.find((a) => !a.startsWith('--'))
    const unknown = args.filter((a) => a.startsWith('--') && a !== '--upsert')
    if (!file || unknown.length) throw new UsageError(unknown.length ? `unknown option ${unknown[0]}` : 'import needs a FILE')
    let text: string
    try {
      text = await Bun.file(file).text()
    } catch (error) {
      throw new DatasetError('', `cannot read ${file}: ${(error as Error).message}`)
    }
    const document = parseJsonFile(text, file)
    const tty = process.stderr.isTTY
    const started = performance.now()
    const summary = await withDatabase(config, ({ stores }) =>
      importDataset(stores.dataset, document, {
        upsert: args.includes('--upsert'),
        onProgress: tty ? (done, total) => process.stderr.write(`\rpositions ${done}/${total}`) : undefined,
      }),
    )
    if (tty) process.stderr.write('\n')
    const counts = Object.entries(summary).map(([k, v]) => `${v} ${k}`).join(', ')
    console.log(`imported ${counts} in ${Math.round(performance.now() - started)} ms`)
    return 0
  },

  async migrate(_args, config) {
    const where = await withDatabase(config, (database) => database.where)
    console.log(`database ${where} is migrated`)
    return 0
  },

  async backup(args, config) {
    const [file, ...rest] = args
    if (!file || file.startsWith('--') || rest.length) throw new UsageError('backup FILE')
    if (config.databaseUrl !== null) {
      // a copy of a PostgreSQL database is PostgreSQL's own tool's to make, consistent while nodes serve
      console.error('error: backup copies the SQLite file; with DATABASE_URL (PostgreSQL) use pg_dump, e.g. pg_dump --format=custom --file=tracker.dump "$DATABASE_URL" (README: Beyond one machine)')
      return 2
    }
    requireDatabaseFile(config.databasePath)
    // the live database as it is: a backup never migrates it
    const result = await withDatabase(config, ({ stores }) => backupDatabase(stores.maintenance, file), { migrate: false })
    console.log(
      `backup of ${config.databasePath} written to ${result.path}: ${result.bytes} bytes, copied in ${Math.round(result.copyMs)} ms, integrity ok (${Math.round(result.checkMs)} ms)`,
    )
    return 0
  },

  async demo(args, config) {
    const speedAt = args.indexOf('--speed')
    const speed = speedAt >= 0 ? Number(args[speedAt + 1]) : 10
    const unknown = args.filter((a, i) => a !== '--speed' && a !== '--exit' && (speedAt < 0 || i !== speedAt + 1))
    if (!(speed > 0) || unknown.length) throw new UsageError(unknown.length ? `unknown argument ${unknown[0]}` : '--speed needs a positive number')
    const { DemoError, runDemo } = await import('./demo')
    try {
      await runDemo({ config, speed, exitWhenDone: args.includes('--exit') })
    } catch (error) {
      if (!(error instanceof DemoError)) throw error
      console.error(`error: ${error.message}`)
      return 1
    }
    return 0
  },

  async version() {
    console.log(pkg.version)
    return 0
  },

  async help() {
    console.log(USAGE)
    return 0
  },

  account: (args, config) => adminCommands.account(args, adminContext(config)),
  device: (args, config) => adminCommands.device(args, adminContext(config)),
  model: (args, config) => adminCommands.model(args, adminContext(config)),
  user: (args, config) => adminCommands.user(args, adminContext(config)),
  key: (args, config) => adminCommands.key(args, adminContext(config)),
  init: (args, config) => adminCommands.init(args, adminContext(config)),
}

/** what the operator's administration commands need from the process */
function adminContext(config: Config): AdminCommandContext {
  return {
    withDatabase: (work) => withDatabase(config, ({ stores, sqlite }) => work({ names: stores.operatorNames, stores, sqlite })),
    now: () => Date.now(),
    print: (line) => console.log(line),
    readStdin: () => Bun.stdin.text(),
  }
}
const ALIASES: Record<string, string> = { '--version': 'version', '--help': 'help', '-h': 'help' }

/**
 * Opens the database (created and migrated unless told otherwise), runs `work`, closes it. A
 * command runs alone, so it may wait for the server's lock the long way (blocking is harmless here).
 */
async function withDatabase<T>(config: Config, work: (database: ProductDatabase) => T | Promise<T>, options: { migrate?: boolean } = {}): Promise<T> {
  const database = await openProduct(config, { purpose: 'command', ...options })
  try {
    return await work(database)
  } finally {
    await database.close()
  }
}

async function run(argv: string[]): Promise<number> {
  // no default command: a bare `npm run cli` must not start a second server by surprise
  if (argv.length === 0) throw new UsageError('no command given')
  const [name, ...args] = argv as [string, ...string[]]
  const command = ALIASES[name] ?? name
  if (!Object.hasOwn(COMMANDS, command)) throw new UsageError(`unknown command ${name}`)
  return COMMANDS[command](args, loadConfig())
}

try {
  const code = await run(process.argv.slice(2))
  if (code >= 0) process.exit(code)
} catch (error) {
  if (error instanceof ArgumentError) {
    console.error(`error: ${error.message}`)
    process.exit(2)
  }
  if (error instanceof UsageError) {
    console.error(`${error.message}\n\n${USAGE}`)
    process.exit(2)
  }
  if (error instanceof DatasetError || error instanceof NotJson || error instanceof ConfigError) {
    console.error(`error: ${error.message}`)
    process.exit(2)
  }
  if (error instanceof DatabaseUnavailable) {
    // one line: the host and the reason, never a stack trace or the password
    console.error(`error: ${error.message}`)
    process.exit(1)
  }
  if (error instanceof PortInUse) {
    // serve or demo: another server most likely runs on it; sharing the port would split the requests
    console.error(`error: ${error.message}; is another server running? Stop it, or set ${error.variable} to a free port`)
    process.exit(1)
  }
  if (error instanceof DomainError) {
    console.error(`error: ${error.detail}`)
    process.exit(error.status === 404 ? 1 : 2)
  }
  console.error(error)
  process.exit(1)
}
