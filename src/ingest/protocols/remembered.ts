/**
 * What a protocol unit remembers of a device between its decoder and its command encoder (H02's
 * maker, a watch's dialect, the reference a JT808 serial or a Meitrack flag was sent under): a
 * map by device that keeps at most `limit` entries, the least recently set forgotten first, so a
 * stream of made-up identifiers cannot grow it without bound.
 */
export class RememberedByDevice<V> {
  private readonly entries = new Map<string, V>()

  constructor(private readonly limit = 10_000) {}

  get(key: string): V | undefined {
    return this.entries.get(key)
  }

  /** Remembers `value` as the newest entry. */
  set(key: string, value: V): void {
    this.entries.delete(key)
    this.entries.set(key, value)
    if (this.entries.size > this.limit) this.entries.delete(this.entries.keys().next().value!)
  }

  delete(key: string): void {
    this.entries.delete(key)
  }

  /** The value, forgotten as it is read (an answer completes its command once). */
  take(key: string): V | undefined {
    const value = this.entries.get(key)
    this.entries.delete(key)
    return value
  }
}
