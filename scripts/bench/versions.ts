/**
 * `npm run bench -- versions <before-dir> [bench …] [--runs N]`: the same benchmarks from two
 * checkouts in one run — another checkout of this repository (e.g. `git worktree add
 * ../before <commit>`, its node_modules installed or linked) and this one — alternating which goes
 * first, so that the machine's noise hits both. Each benchmark already measures its product
 * against its floor in its own run; this compares those ratios, before and after, and prints
 * every ratio of every run, their medians, and the change (a throughput ratio, as devices and
 * ingest give, is better higher; a time ratio, as history gives, is better lower). Default benches: devices, history,
 * ingest (P1, P2, P3 and Teltonika over TCP). The full output of each run is kept in the temp
 * folder and named at the end.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

/**
 * Every "0.78×" of a benchmark's output, keyed by where it stands: the section it is under (a
 * line that is not indented, or "(a) …"), the text before the figures, and its place on the line.
 * Goals written as "(goal ≥ 0.5×)" are not figures.
 */
export function ratiosOf(output: string): Map<string, number> {
  const found = new Map<string, number>()
  let section = ''
  for (const raw of output.split('\n')) {
    const line = raw.replace(/\(goal[^)]*\)/g, '')
    const figures = [...line.matchAll(/(\d+(?:\.\d+)?)×/g)]
    if (/^\S/.test(line) && figures.length === 0) section = line.trim().replace(/\s+/g, ' ').slice(0, 60)
    if (figures.length === 0) continue
    // the words before the first figure, up to the first number that is not the line's first word ("1 day 86,400 …" → "1 day")
    const words = line.slice(0, figures[0]!.index).trim().split(/\s+/)
    const cut = words.findIndex((word, k) => k > 0 && /^[\d.,]+$/.test(word))
    const label = (cut < 0 ? words : words.slice(0, cut)).join(' ')
    figures.forEach((figure, k) => found.set(`${section} › ${label}${figures.length > 1 ? ` #${k + 1}` : ''}`, Number(figure[1])))
  }
  return found
}

async function runBench(tree: string, bench: string, tag: string, logs: string): Promise<Map<string, number>> {
  const child = Bun.spawn([process.execPath, join(tree, 'scripts', 'bench', `${bench}.ts`)], {
    cwd: tree,
    // each checkout builds its own history database (named by its path): the two schemas need not agree
    env: { ...process.env, BENCH_HISTORY_DB: join(tmpdir(), `bench-history-${tree.replace(/[^A-Za-z0-9]+/g, '-')}.db`) },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
  const code = await child.exited
  writeFileSync(join(logs, `${bench}-${tag}.log`), `${out}\n${err}`)
  if (code !== 0) throw new Error(`${bench} in ${tree} exited ${code}: ${err.slice(-500)}`)
  return ratiosOf(out)
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

if (import.meta.main) {
  const args = process.argv.slice(2)
  const runsAt = args.indexOf('--runs')
  const runs = runsAt >= 0 ? Number(args[runsAt + 1]) : 2
  const positional = args.filter((arg, i) => !arg.startsWith('--') && (runsAt < 0 || i !== runsAt + 1))
  const [beforeDir, ...named] = positional
  if (!beforeDir || !Number.isInteger(runs) || runs < 1) {
    console.error('usage: npm run bench -- versions <before-dir> [devices|history|ingest …] [--runs N]')
    process.exit(2)
  }
  const benches = named.length ? named : ['devices', 'history', 'ingest']
  const trees = { before: resolve(beforeDir), after: resolve(import.meta.dir, '..', '..') }
  const logs = mkdtempSync(join(tmpdir(), 'bench-versions-'))
  console.log(`versions: before ${trees.before}, after ${trees.after}; ${runs} run(s) of ${benches.join(', ')}, alternating`)
  for (const bench of benches) {
    const seen: Record<'before' | 'after', Map<string, number[]>> = { before: new Map(), after: new Map() }
    for (let run = 0; run < runs; run++) {
      const order: ('before' | 'after')[] = run % 2 === 0 ? ['before', 'after'] : ['after', 'before']
      for (const side of order) {
        const ratios = await runBench(trees[side], bench, `${side}-${run + 1}`, logs)
        for (const [key, value] of ratios) seen[side].set(key, [...(seen[side].get(key) ?? []), value])
      }
    }
    console.log(`\n${bench}: ratio to the floor, each run (median) — before → after, change of the medians`)
    for (const [key, after] of seen.after) {
      const before = seen.before.get(key)
      if (!before) continue
      const [b, a] = [median(before), median(after)]
      const change = ((a - b) / b) * 100
      console.log(`  ${key}\n    ${before.join(', ')} (${b.toFixed(2)}×) → ${after.join(', ')} (${a.toFixed(2)}×)   ${change >= 0 ? '+' : ''}${change.toFixed(1)}%`)
    }
  }
  console.log(`\nfull outputs: ${logs}`)
}
