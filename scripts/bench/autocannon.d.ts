/** The little of autocannon's API the ingest benchmark's load process uses (it ships no types). */
declare module 'autocannon' {
  interface Result {
    requests: { average: number; total: number }
    latency: { p50: number; p99: number }
    errors: number
    non2xx: number
  }
  interface Options {
    url: string
    connections?: number
    duration?: number
    requests?: { method?: string; setupRequest?: (request: { path: string }) => { path: string } }[]
  }
  function autocannon(options: Options): Promise<Result>
  export default autocannon
}
