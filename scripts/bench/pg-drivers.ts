/**
 * `npm run bench -- pg-drivers`: the two PostgreSQL drivers Bun can use, side by side in one run
 * against the same database (BENCH_DATABASE_URL, default the local tracker role's): postgres.js
 * (the product's, through drizzle-orm/postgres-js) and Bun's own Bun.SQL. Point reads one after
 * another, the same reads all at once over a pool of 4, and transactions of 8 pipelined
 * statements (ingest's shape). Rounds alternate; the first is a warm-up and is not reported.
 */
import postgres from 'postgres'

const url = process.env.BENCH_DATABASE_URL ?? 'postgres://tracker:tracker@127.0.0.1:5432/tracker'
const READS = 5000
const TRANSACTIONS = 500
const ROUNDS = Number(process.argv[2] ?? 3)

const pj = postgres(url, { max: 4, onnotice: () => {} })
const bs = new Bun.SQL(url, { max: 4 })
type Query = (i: number) => PromiseLike<unknown>
type Begin = (work: (tx: (strings: TemplateStringsArray, ...values: unknown[]) => PromiseLike<unknown>) => Promise<unknown>) => PromiseLike<unknown>

async function perSecond(count: number, run: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await run()
  return Math.round(count / ((performance.now() - started) / 1000))
}
const sequential = (q: Query) => perSecond(READS, async () => {
  for (let i = 0; i < READS; i++) await q(i)
})
const concurrent = (q: Query) => perSecond(READS, () => Promise.all(Array.from({ length: READS }, (_, i) => q(i))))
const pipelined = (begin: Begin) =>
  perSecond(TRANSACTIONS, async () => {
    for (let i = 0; i < TRANSACTIONS; i++) await begin((tx) => Promise.all(Array.from({ length: 8 }, (_, j) => tx`SELECT ${j}::int AS x, ${i}::int AS y`)))
  })

const drivers = {
  'postgres.js': { query: ((i) => pj`SELECT ${i}::int AS key, md5(${String(i)}) AS id`) as Query, begin: ((w) => pj.begin(w as never)) as Begin },
  'Bun.SQL': { query: ((i) => bs`SELECT ${i}::int AS key, md5(${String(i)}) AS id`) as Query, begin: ((w) => bs.begin(w as never)) as Begin },
}
const results: Record<string, Record<string, number[]>> = {}
for (let round = 0; round <= ROUNDS; round++) {
  for (const [name, driver] of Object.entries(drivers)) {
    const figures = { 'sequential reads/s': await sequential(driver.query), 'concurrent reads/s': await concurrent(driver.query), 'transactions of 8/s': await pipelined(driver.begin) }
    if (round === 0) continue
    for (const [what, value] of Object.entries(figures)) ((results[what] ??= {})[name] ??= []).push(value)
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
for (const [what, byDriver] of Object.entries(results)) {
  const a = median(byDriver['postgres.js']!)
  const b = median(byDriver['Bun.SQL']!)
  console.log(`${what.padEnd(22)} postgres.js ${String(a).padStart(7)}   Bun.SQL ${String(b).padStart(7)}   postgres.js/Bun.SQL ${(a / b).toFixed(2)}×   (medians of ${ROUNDS} rounds)`)
}
await pj.end()
await bs.close()
