/**
 * A small Prometheus registry: counters, gauges and histograms with labels, rendered in the
 * text exposition format 0.0.4. Written here rather than taken from npm because what we need is
 * ~150 lines and the hot paths (one counter and one histogram per HTTP request) want a series
 * looked up once, not a label object hashed on every call.
 */

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

type Labels = readonly string[]

const escapeLabel = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
const escapeHelp = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')

/** Prometheus renders +Inf, -Inf and NaN by name; integers without a decimal point. */
function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN'
  if (value === Infinity) return '+Inf'
  if (value === -Infinity) return '-Inf'
  return String(value)
}

function labelText(names: Labels, values: Labels, extra?: [string, string]): string {
  const parts: string[] = []
  for (let i = 0; i < names.length; i++) parts.push(`${names[i]}="${escapeLabel(values[i] ?? '')}"`)
  if (extra) parts.push(`${extra[0]}="${escapeLabel(extra[1])}"`)
  return parts.length ? `{${parts.join(',')}}` : ''
}

abstract class Metric<Series> {
  protected readonly series = new Map<string, { values: Labels; data: Series }>()

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: Labels,
  ) {
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) throw new Error(`invalid metric name ${name}`)
  }

  abstract readonly type: 'counter' | 'gauge' | 'histogram'
  protected abstract create(): Series
  protected abstract lines(name: string, values: Labels, data: Series): string[]

  /** The series for these label values (created at first use); keep it for hot paths. */
  protected seriesFor(values: Labels): Series {
    if (values.length !== this.labelNames.length) {
      throw new Error(`${this.name} takes ${this.labelNames.length} label values, got ${values.length}`)
    }
    const key = values.join('\u0001')
    let entry = this.series.get(key)
    if (!entry) {
      entry = { values: [...values], data: this.create() }
      this.series.set(key, entry)
    }
    return entry.data
  }

  /** Start a series at zero, so that it is scraped (as 0) before its first event. */
  zero(values: Labels = []): void {
    this.seriesFor(values)
  }

  render(): string {
    const out = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`]
    for (const { values, data } of this.series.values()) out.push(...this.lines(this.name, values, data))
    return out.join('\n')
  }
}

interface Cell {
  value: number
}

export class Counter extends Metric<Cell> {
  readonly type = 'counter'
  protected create(): Cell {
    return { value: 0 }
  }
  protected lines(name: string, values: Labels, cell: Cell): string[] {
    return [`${name}${labelText(this.labelNames, values)} ${formatValue(cell.value)}`]
  }
  /** A handle on one series: `inc()` without a lookup. */
  labels(...values: string[]): { inc(by?: number): void } {
    const cell = this.seriesFor(values)
    return {
      inc(by = 1) {
        if (by < 0) throw new Error('a counter only goes up')
        cell.value += by
      },
    }
  }
  inc(values: Labels = [], by = 1): void {
    if (by < 0) throw new Error('a counter only goes up')
    this.seriesFor(values).value += by
  }
  get(values: Labels = []): number {
    return this.seriesFor(values).value
  }
}

export class Gauge extends Metric<Cell> {
  readonly type = 'gauge'
  /** when set, read at every scrape (values for label sets, or one value without labels) */
  collect?: (set: (values: Labels, value: number) => void) => void

  protected create(): Cell {
    return { value: 0 }
  }
  protected lines(name: string, values: Labels, cell: Cell): string[] {
    return [`${name}${labelText(this.labelNames, values)} ${formatValue(cell.value)}`]
  }
  set(values: Labels, value: number): void {
    this.seriesFor(values).value = value
  }
  get(values: Labels = []): number {
    return this.seriesFor(values).value
  }
  override render(): string {
    this.collect?.((values, value) => this.set(values, value))
    return super.render()
  }
}

interface Buckets {
  counts: number[]
  sum: number
  count: number
}

export class Histogram extends Metric<Buckets> {
  readonly type = 'histogram'

  constructor(
    name: string,
    help: string,
    labelNames: Labels,
    /** upper bounds, ascending; +Inf is implied */
    readonly buckets: readonly number[],
  ) {
    super(name, help, labelNames)
    for (let i = 1; i < buckets.length; i++) if (!(buckets[i] > buckets[i - 1])) throw new Error(`${name}: buckets must ascend`)
  }

  protected create(): Buckets {
    return { counts: new Array(this.buckets.length).fill(0), sum: 0, count: 0 }
  }

  protected lines(name: string, values: Labels, data: Buckets): string[] {
    const out: string[] = []
    let cumulative = 0
    for (let i = 0; i < this.buckets.length; i++) {
      cumulative += data.counts[i]
      out.push(`${name}_bucket${labelText(this.labelNames, values, ['le', formatValue(this.buckets[i])])} ${cumulative}`)
    }
    out.push(`${name}_bucket${labelText(this.labelNames, values, ['le', '+Inf'])} ${data.count}`)
    out.push(`${name}_sum${labelText(this.labelNames, values)} ${formatValue(data.sum)}`)
    out.push(`${name}_count${labelText(this.labelNames, values)} ${data.count}`)
    return out
  }

  private record(data: Buckets, value: number): void {
    // counts are per bucket here and made cumulative when rendered: one increment per sample
    const bounds = this.buckets
    let i = 0
    while (i < bounds.length && value > bounds[i]) i++
    if (i < bounds.length) data.counts[i]++
    data.sum += value
    data.count++
  }

  labels(...values: string[]): { observe(value: number): void } {
    const data = this.seriesFor(values)
    return { observe: (value) => this.record(data, value) }
  }
  observe(values: Labels, value: number): void {
    this.record(this.seriesFor(values), value)
  }
  /** count and sum of one series (tests) */
  snapshot(values: Labels = []): { count: number; sum: number } {
    const { count, sum } = this.seriesFor(values)
    return { count, sum }
  }
}

export class Registry {
  private readonly metrics: Metric<unknown>[] = []
  /** labels every sample carries first (`node`, when several processes serve one database), as `name="value"` text */
  private readonly constant: string

  constructor(constLabels: Record<string, string> = {}) {
    this.constant = Object.entries(constLabels)
      .map(([name, value]) => `${name}="${escapeLabel(value)}"`)
      .join(',')
  }

  private add<M extends Metric<unknown>>(metric: M): M {
    if (this.metrics.some((m) => m.name === metric.name)) throw new Error(`metric ${metric.name} is registered twice`)
    this.metrics.push(metric)
    if (metric.labelNames.length === 0) metric.zero()
    return metric
  }

  counter(name: string, help: string, labelNames: Labels = []): Counter {
    return this.add(new Counter(name, help, labelNames))
  }
  gauge(name: string, help: string, labelNames: Labels = [], collect?: Gauge['collect']): Gauge {
    const gauge = new Gauge(name, help, labelNames)
    gauge.collect = collect
    return this.add(gauge)
  }
  histogram(name: string, help: string, labelNames: Labels, buckets: readonly number[]): Histogram {
    return this.add(new Histogram(name, help, labelNames, buckets))
  }

  /** each sample line of a metric's text with the constant labels first */
  private withConstant(text: string): string {
    return text
      .split('\n')
      .map((line) => {
        if (line.startsWith('#')) return line
        const space = line.indexOf(' ')
        const brace = line.indexOf('{')
        if (brace !== -1 && brace < space) return `${line.slice(0, brace + 1)}${this.constant},${line.slice(brace + 1)}`
        return `${line.slice(0, space)}{${this.constant}}${line.slice(space)}`
      })
      .join('\n')
  }

  /** The exposition text; a collector that throws is skipped, so one broken source cannot hide the rest. */
  render(): string {
    const parts: string[] = []
    for (const metric of this.metrics) {
      try {
        parts.push(this.constant === '' ? metric.render() : this.withConstant(metric.render()))
      } catch {
        // a gauge reading a closed database, say: leave it out of this scrape
      }
    }
    return parts.join('\n') + '\n'
  }
}
