/**
 * The repository stands alone: a clone from a hosting site has nothing beside it, so no tracked
 * file may point outside it to the sibling folder the project was first developed next to.
 * (The needle is built, so that this file does not hold it.)
 */
import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'

const ROOT = join(import.meta.dir, '..')
const SIBLING_FOLDER = '..' + '/shared'
/** npm's lock file is written by npm, and names no such path */
const SKIPPED = new Set(['package-lock.json'])

function trackedFiles(): string[] {
  const listed = Bun.spawnSync(['git', 'ls-files', '-z'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  if (listed.exitCode !== 0) throw new Error(`git ls-files failed: ${listed.stderr.toString()}`)
  return listed.stdout.toString().split('\0').filter((file) => file !== '' && !SKIPPED.has(file))
}

// A source archive without .git has no file list to check.
describe.skipIf(!existsSync(join(ROOT, '.git')))('the repository', () => {
  test(`no tracked file mentions ${SIBLING_FOLDER}`, () => {
    const files = trackedFiles()
    expect(files.length).toBeGreaterThan(50)
    const needle = Buffer.from(SIBLING_FOLDER)
    // a file deleted in the work tree but not yet in the index is not there to read
    const offenders = files.filter((file) => existsSync(join(ROOT, file)) && readFileSync(join(ROOT, file)).includes(needle))
    expect(offenders).toEqual([])
  })

  test('every relative link in README.md and docs/ leads to a file of the repository', () => {
    const tracked = new Set(trackedFiles())
    const pages = [...tracked].filter((file) => file === 'README.md' || /^docs\/.*\.md$/.test(file))
    expect(pages).toContain('docs/import-format.md')
    expect(pages).toContain('docs/api-decisions.md')
    const broken: string[] = []
    for (const page of pages) {
      const text = readFileSync(join(ROOT, page), 'utf8')
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target) || target.startsWith('#')) continue
        const file = normalize(join(dirname(page), target.split('#')[0]))
        const isFolder = [...tracked].some((f) => f.startsWith(`${file.replace(/\/$/, '')}/`))
        if (!tracked.has(file) && !isFolder) broken.push(`${page} → ${target}`)
      }
    }
    expect(broken).toEqual([])
  })
})
