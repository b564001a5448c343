/**
 * Asks `/health` every 10 ms until its stdin closes, then prints its latencies as JSON: a process
 * of its own, so that what the benchmark's clients do (reading routes) does not delay it.
 */
const url = process.argv[2]
const samples: number[] = []
let running = true
void (async () => {
  // nothing is sent: the stream ends when the benchmark closes it
  const reader = Bun.stdin.stream().getReader()
  while (!(await reader.read()).done) {}
  running = false
})()
while (running) {
  const started = performance.now()
  await (await fetch(url)).arrayBuffer()
  samples.push(performance.now() - started)
  await Bun.sleep(10)
}
samples.sort((a, b) => a - b)
const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]
console.log(JSON.stringify({ count: samples.length, p50: at(0.5), p99: at(0.99), max: samples[samples.length - 1] }))

export {}
