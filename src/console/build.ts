/**
 * The console's bundle: src/console/app/main.tsx and everything it imports (Preact, signals,
 * Leaflet, supercluster, the styles) built by Bun.build into a few files held in memory. From
 * source the server builds it on first use (tens of milliseconds); scripts/build.ts builds it once
 * more and embeds the result in the executable (see prebuilt.ts), where the sources are absent.
 */
import { join } from 'node:path'

export interface ConsoleAssetFile {
  /** file name under /console/assets/, with its content hash: `main-1a2b3c.js` */
  name: string
  /** Content-Type */
  type: string
  body: Uint8Array<ArrayBuffer>
  /** the entry script and its stylesheet, which the page links; other files are what they import */
  role: 'script' | 'style' | 'other'
}

const ENTRY = join(import.meta.dir, 'app', 'main.tsx')

export class ConsoleBuildError extends Error {}

export async function buildConsoleAssets(): Promise<ConsoleAssetFile[]> {
  const result = await Bun.build({
    entrypoints: [ENTRY],
    target: 'browser',
    format: 'esm',
    minify: true,
    // content-hashed names: the files can be cached for a year, the page (no-store) names the current ones
    naming: { entry: '[name]-[hash].[ext]', chunk: '[name]-[hash].[ext]', asset: '[name]-[hash].[ext]' },
    define: { 'process.env.NODE_ENV': '"production"' },
    jsx: { runtime: 'automatic', importSource: 'preact', development: false },
    throw: false,
    // a library one view needs (uPlot for History) is import()ed: its own file, fetched when that view opens
    splitting: true,
  })
  if (!result.success) throw new ConsoleBuildError(`the console could not be built:\n${result.logs.map(String).join('\n')}`)
  const files: ConsoleAssetFile[] = []
  for (const output of result.outputs) {
    const name = output.path.replace(/^\.\//, '')
    if (name.endsWith('.map')) continue
    const role = output.kind === 'entry-point' ? 'script' : name.endsWith('.css') && name.startsWith('main-') ? 'style' : 'other'
    files.push({ name, type: output.type, body: new Uint8Array(await output.arrayBuffer()), role })
  }
  return files
}
