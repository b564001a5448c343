#!/usr/bin/env bun
/**
 * npm run build [-- --x64] [-- --x64-baseline] [-- --arm64] [-- --all] [-- --outdir DIR]
 *
 * One executable with everything inside: `bun build --compile` of src/main.ts, ESM with
 * bytecode (faster start), migrations, web assets, the API docs UI, the geocoder's cities and
 * the demo's bus recordings embedded (they are `with { type: 'text' | 'file' }` imports). The
 * console is bundled first and its files replace src/console/prebuilt.ts (see consoleAssetsPlugin). The
 * executable ignores a .env or bunfig.toml in the folder it runs from: its configuration is the
 * environment, nothing else.
 *
 * Without a flag: dist/tracker for this machine. `--x64` / `--arm64` / `--all` (both):
 * dist/tracker-linux-x64, dist/tracker-linux-arm64. `--x64-baseline`: dist/tracker-linux-x64-baseline,
 * for x64 CPUs without AVX2 (older Atom and Celeron gateways), which the x64 runtime needs.
 *
 * Cross-compiling needs the Bun runtime of the other architecture. Bun would download it from
 * GitHub; we take the same runtime from the npm registry instead (@oven/bun-linux-aarch64 or
 * @oven/bun-linux-x64[-baseline], exactly this Bun's version, integrity-checked by npm) with `npm pack`,
 * cache it in node_modules/.cache/bun-runtimes, and hand it to Bun as `executablePath`.
 * BUN_RUNTIME_LINUX_ARM64 / _X64 / _X64_BASELINE point at a runtime you already have (offline).
 */
import type { BunPlugin } from 'bun'
import { buildConsoleAssets } from '../src/console/build'
import type { PrebuiltFile } from '../src/console/prebuilt'
import { BUN_MAX_HEADER_BYTES } from '../src/http/headers'
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'

type Arch = 'x64' | 'x64-baseline' | 'arm64'

const ROOT = resolve(import.meta.dir, '..')
const RUNTIME_PACKAGE: Record<Arch, string> = { x64: '@oven/bun-linux-x64', 'x64-baseline': '@oven/bun-linux-x64-baseline', arm64: '@oven/bun-linux-aarch64' }
/** ELF e_machine of each architecture, to check a runtime before building with it */
const ELF_MACHINE: Record<Arch, number> = { x64: 0x3e, 'x64-baseline': 0x3e, arm64: 0xb7 }

class BuildError extends Error {}

function parseArgs(argv: string[]) {
  const targets = new Set<Arch>()
  let outdir = join(ROOT, 'dist')
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--x64') targets.add('x64')
    else if (arg === '--x64-baseline') targets.add('x64-baseline')
    else if (arg === '--arm64') targets.add('arm64')
    else if (arg === '--all') {
      targets.add('x64')
      targets.add('arm64')
    } else if (arg === '--outdir') outdir = resolve(argv[++i] ?? '')
    else throw new BuildError(`unknown option ${arg}\nusage: npm run build [-- --x64 | --x64-baseline | --arm64 | --all] [--outdir DIR]`)
  }
  return { targets: [...targets], named: targets.size > 0, outdir }
}

function hostArch(): Arch | null {
  if (process.platform !== 'linux') return null
  return process.arch === 'x64' ? 'x64' : process.arch === 'arm64' ? 'arm64' : null
}

function elfMachine(path: string): number | null {
  const header = readFileSync(path).subarray(0, 20)
  if (header[0] !== 0x7f || header[1] !== 0x45 || header[2] !== 0x4c || header[3] !== 0x46) return null
  return header.readUInt16LE(18)
}

/** npm's first words on a failure (the code and the request), without its advice and log paths */
function npmErrors(stderr: string): string {
  const lines = stderr.split('\n').map((l) => l.replace(/^npm (error|ERR!) ?/, '').trim()).filter(Boolean)
  return lines.slice(0, 2).join('\n')
}

/** The Bun runtime for `arch`: this very Bun when it matches, else from the npm registry (cached). */
async function runtimeFor(arch: Arch): Promise<string | undefined> {
  if (arch === hostArch()) return undefined
  const variable = `BUN_RUNTIME_LINUX_${arch.toUpperCase().replace('-', '_')}`
  const override = process.env[variable]
  if (override) {
    if (elfMachine(override) !== ELF_MACHINE[arch]) throw new BuildError(`${override} is not a linux-${arch} executable`)
    return override
  }
  const pkg = `${RUNTIME_PACKAGE[arch]}@${Bun.version}`
  const cache = join(ROOT, 'node_modules', '.cache', 'bun-runtimes', `${RUNTIME_PACKAGE[arch].replace('/', '+')}-${Bun.version}`)
  const binary = join(cache, 'package', 'bin', 'bun')
  if (existsSync(binary) && elfMachine(binary) === ELF_MACHINE[arch]) return binary

  console.log(`fetching the linux-${arch} Bun runtime: npm pack ${pkg}`)
  rmSync(cache, { recursive: true, force: true })
  mkdirSync(cache, { recursive: true })
  const pack = Bun.spawnSync(['npm', 'pack', pkg, '--pack-destination', cache, '--loglevel=error'], { cwd: cache, stdout: 'pipe', stderr: 'pipe' })
  const tarball = readdirSync(cache).find((f) => f.endsWith('.tgz'))
  if (pack.exitCode !== 0 || !tarball) {
    throw new BuildError(
      `cannot build for linux-${arch}: the Bun runtime for it (${pkg}) could not be fetched from the npm registry.\n` +
        `${npmErrors(pack.stderr.toString())}\n` +
        `Bun needs that runtime to cross-compile (it is the executable the program is appended to). Either make the npm ` +
        `registry reachable, or fetch the package elsewhere (npm pack ${pkg}), unpack it, and run the build with ` +
        `${variable}=/path/to/package/bin/bun.`,
    )
  }
  const untar = Bun.spawnSync(['tar', '-xzf', join(cache, tarball), '-C', cache], { stdout: 'pipe', stderr: 'pipe' })
  if (untar.exitCode !== 0 || !existsSync(binary)) throw new BuildError(`cannot unpack ${tarball}: ${untar.stderr.toString().trim()}`)
  rmSync(join(cache, tarball))
  chmodSync(binary, 0o755)
  if (elfMachine(binary) !== ELF_MACHINE[arch]) throw new BuildError(`${pkg} did not contain a linux-${arch} executable`)
  return binary
}

const TEXT_TYPE = /^(text\/|application\/(json|javascript))/

/**
 * The console's files, bundled here once, in place of src/console/prebuilt.ts: the executable
 * serves them as they are, with neither the console's sources nor node_modules beside it.
 */
async function consoleAssetsPlugin(): Promise<BunPlugin> {
  const files: PrebuiltFile[] = (await buildConsoleAssets()).map(({ name, type, role, body }) =>
    TEXT_TYPE.test(type) ? { name, type, role, text: new TextDecoder().decode(body) } : { name, type, role, base64: Buffer.from(body).toString('base64') },
  )
  const contents = `export const prebuilt = ${JSON.stringify(files)}\n`
  return {
    name: 'console-assets',
    setup(builder) {
      builder.onLoad({ filter: /[\\/]src[\\/]console[\\/]prebuilt\.ts$/ }, () => ({ contents, loader: 'js' }))
    },
  }
}

async function build(arch: Arch, outfile: string): Promise<void> {
  const executablePath = await runtimeFor(arch)
  const started = performance.now()
  const result = await Bun.build({
    entrypoints: [join(ROOT, 'src/main.ts')],
    target: 'bun',
    format: 'esm',
    bytecode: true,
    // names kept: a stack trace in a log should say which function failed
    minify: { whitespace: true, syntax: true, identifiers: false },
    // embedded in the executable (stack traces point into src/); the .map Bun also writes is removed below
    sourcemap: 'linked',
    define: { 'process.env.NODE_ENV': '"production"' },
    plugins: [await consoleAssetsPlugin()],
    compile: {
      target: `bun-linux-${arch}`,
      outfile,
      ...(executablePath ? { executablePath } : {}),
      // as `npm start` runs it: Bun takes headers up to 64 KiB, so that the app's own 16 KiB limit answers with problem details (src/http/headers.ts)
      execArgv: [`--max-http-header-size=${BUN_MAX_HEADER_BYTES}`],
      // configuration is the environment: a stray .env or bunfig.toml where it runs changes nothing
      autoloadDotenv: false,
      autoloadBunfig: false,
      autoloadTsconfig: false,
      autoloadPackageJson: false,
    },
  })
  if (!result.success) {
    throw new BuildError(`build for linux-${arch} failed:\n${result.logs.map((l) => String(l)).join('\n')}`)
  }
  rmSync(`${outfile}.map`, { force: true })
  const size = statSync(outfile).size
  console.log(`${outfile}  linux-${arch}  ${(size / 1024 / 1024).toFixed(1)} MiB  ${Math.round(performance.now() - started)} ms`)
}

try {
  const { targets, named, outdir } = parseArgs(process.argv.slice(2))
  mkdirSync(outdir, { recursive: true })
  if (!named) {
    const arch = hostArch()
    if (!arch) throw new BuildError(`this machine (${process.platform}-${process.arch}) is not linux-x64 or linux-arm64: name a target (--x64, --arm64)`)
    await build(arch, join(outdir, 'tracker'))
  } else {
    for (const arch of targets) await build(arch, join(outdir, `tracker-linux-${arch}`))
  }
} catch (error) {
  if (error instanceof BuildError) {
    console.error(`error: ${error.message}`)
    process.exit(1)
  }
  throw error
}
