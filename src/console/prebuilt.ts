/**
 * The console's built files inside a compiled executable. From source this is null and the
 * server bundles the console on first use (build.ts); scripts/build.ts replaces this module, when
 * it compiles the executable, with one that holds the files it built (text as text, the rest as
 * base64), because the executable has neither the sources nor node_modules beside it.
 */
export interface PrebuiltFile {
  name: string
  type: string
  role: 'script' | 'style' | 'other'
  text?: string
  base64?: string
}

export const prebuilt: readonly PrebuiltFile[] | null = null
