/** The small Prometheus registry: exposition format, labels, histogram buckets, collectors. */
import { describe, expect, test } from 'bun:test'
import { Registry } from '../../src/ops/metrics'

describe('metrics registry', () => {
  test('counters and gauges in the text format, label values escaped, unlabelled ones start at 0', () => {
    const registry = new Registry()
    const requests = registry.counter('x_requests_total', 'Requests\nby route', ['route'])
    registry.counter('x_started_total', 'Started')
    const temperature = registry.gauge('x_temperature', 'Temperature', ['room'])
    requests.inc(['/a'])
    requests.labels('/a').inc(2)
    requests.inc(['say "hi"\\\n'])
    temperature.set(['lab'], -1.5)
    expect(registry.render()).toBe(
      [
        '# HELP x_requests_total Requests\\nby route',
        '# TYPE x_requests_total counter',
        'x_requests_total{route="/a"} 3',
        'x_requests_total{route="say \\"hi\\"\\\\\\n"} 1',
        '# HELP x_started_total Started',
        '# TYPE x_started_total counter',
        'x_started_total 0',
        '# HELP x_temperature Temperature',
        '# TYPE x_temperature gauge',
        'x_temperature{room="lab"} -1.5',
        '',
      ].join('\n'),
    )
    expect(() => requests.inc(['/a'], -1)).toThrow()
    expect(() => requests.inc([])).toThrow()
    expect(() => registry.counter('x_started_total', 'again')).toThrow()
  })

  test('a node label goes first on every sample, labelled or not, histograms too', () => {
    const registry = new Registry({ node: 'edge-1' })
    registry.counter('x_requests_total', 'Requests', ['route']).inc(['/a b'])
    registry.counter('x_started_total', 'Started')
    registry.histogram('x_seconds', 'Latency', [], [1]).observe([], 0.5)
    const samples = registry.render().split('\n').filter((line) => line !== '' && !line.startsWith('#'))
    expect(samples).toEqual([
      'x_requests_total{node="edge-1",route="/a b"} 1',
      'x_started_total{node="edge-1"} 0',
      'x_seconds_bucket{node="edge-1",le="1"} 1',
      'x_seconds_bucket{node="edge-1",le="+Inf"} 1',
      'x_seconds_sum{node="edge-1"} 0.5',
      'x_seconds_count{node="edge-1"} 1',
    ])
  })

  test('histograms: cumulative buckets, +Inf, sum and count', () => {
    const registry = new Registry()
    const latency = registry.histogram('x_seconds', 'Latency', ['route'], [0.01, 0.1, 1])
    for (const v of [0.005, 0.01, 0.05, 0.5, 3]) latency.observe(['/a'], v)
    const text = registry.render()
    expect(text).toContain('x_seconds_bucket{route="/a",le="0.01"} 2\n')
    expect(text).toContain('x_seconds_bucket{route="/a",le="0.1"} 3\n')
    expect(text).toContain('x_seconds_bucket{route="/a",le="1"} 4\n')
    expect(text).toContain('x_seconds_bucket{route="/a",le="+Inf"} 5\n')
    expect(text).toContain('x_seconds_sum{route="/a"} 3.565\n')
    expect(text).toContain('x_seconds_count{route="/a"} 5\n')
    expect(latency.snapshot(['/a'])).toEqual({ count: 5, sum: 3.565 })
    expect(() => registry.histogram('x_bad', 'Bad', [], [1, 1])).toThrow()
  })

  test('collected gauges are read at scrape time; a collector that throws leaves only itself out', () => {
    const registry = new Registry()
    let connected = 3
    registry.gauge('x_connected', 'Connected', [], (set) => set([], connected))
    registry.gauge('x_broken', 'Broken', [], () => {
      throw new Error('database closed')
    })
    expect(registry.render()).toContain('x_connected 3\n')
    connected = 5
    const text = registry.render()
    expect(text).toContain('x_connected 5\n')
    expect(text).not.toContain('x_broken')
  })
})
