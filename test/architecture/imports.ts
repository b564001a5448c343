/**
 * The project's import graph as the source states it: each file under src/ and db/ and the files it
 * imports at run time (`import type` and `export type` are left out: they are erased), resolved
 * to repository paths. For the architecture tests; reads files, runs nothing.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

export const ROOT = join(import.meta.dir, '..', '..')

/** every .ts/.tsx file under the given folders (relative to the repository), as repository paths */
export function sourceFiles(...folders: string[]): string[] {
  const files: string[] = []
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) files.push(relative(ROOT, path))
    }
  }
  for (const folder of folders) walk(join(ROOT, folder))
  return files.sort()
}

const IMPORT = /^\s*(?:import|export)\s+(type\s+)?(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]/gm

function resolveImport(from: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null
  const base = resolve(ROOT, dirname(from), specifier)
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return relative(ROOT, candidate)
  }
  return null
}

/** the repository files `file` imports at run time (with `types`: type-only imports too) */
export function runtimeImports(file: string, types = false): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8')
  const found = new Set<string>()
  for (const match of text.matchAll(IMPORT)) {
    if (match[1] && !types) continue
    const target = resolveImport(file, match[2]!)
    if (target) found.add(target)
  }
  return [...found]
}

/** every file reached from `file` at run time (with `types`: through type-only imports too), itself included */
export function closureOf(file: string, types = false): Set<string> {
  const seen = new Set<string>([file])
  const queue = [file]
  while (queue.length) {
    for (const next of runtimeImports(queue.pop()!, types)) {
      if (!seen.has(next)) {
        seen.add(next)
        queue.push(next)
      }
    }
  }
  return seen
}
