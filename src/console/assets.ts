/**
 * The console's files, as the server serves them: the embedded ones in a compiled executable,
 * else a bundle built from source on first use and kept. Each file is held gzipped too, sent to
 * browsers that accept it (a gateway's uplink is often slow).
 */
import { buildConsoleAssets, type ConsoleAssetFile } from './build'
import { prebuilt, type PrebuiltFile } from './prebuilt'

export interface ConsoleAsset extends ConsoleAssetFile {
  gzipped: Uint8Array<ArrayBuffer>
}

export interface ConsoleAssets {
  /** by file name; a Map, so a name from the URL can never reach Object.prototype */
  files: Map<string, ConsoleAsset>
  script: string
  style: string | null
}

function decode(file: PrebuiltFile): ConsoleAssetFile {
  const body = file.text !== undefined ? new TextEncoder().encode(file.text) : new Uint8Array(Buffer.from(file.base64 ?? '', 'base64'))
  return { name: file.name, type: file.type, role: file.role, body }
}

function assemble(list: ConsoleAssetFile[]): ConsoleAssets {
  const files = new Map<string, ConsoleAsset>(list.map((f) => [f.name, { ...f, gzipped: Bun.gzipSync(f.body) as Uint8Array<ArrayBuffer> }]))
  const script = list.find((f) => f.role === 'script')
  if (!script) throw new Error('the console bundle has no entry script')
  return { files, script: script.name, style: list.find((f) => f.role === 'style')?.name ?? null }
}

let loading: Promise<ConsoleAssets> | undefined

/** The console's files; built once per process when they are not embedded. A failed build is tried again on the next call. */
export function consoleAssets(): Promise<ConsoleAssets> {
  loading ??= (prebuilt ? Promise.resolve(prebuilt.map(decode)) : buildConsoleAssets()).then(assemble, (error) => {
    loading = undefined
    throw error
  })
  return loading
}
