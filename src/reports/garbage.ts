/**
 * A full collection when the process has grown by `growthBytes` since the last one. A long report
 * makes garbage (rows, cells, XML text) that the young generation's collections leave for later,
 * so left alone a 100,000-row route's XLSX peaked at 72–99 MB above idle, over the contract's
 * 64 MB. A collection at a fixed pace bounds that, but costs in proportion to the live heap (250
 * ms at 550 MB): asked only when resident memory has really grown, a process with room to spare
 * pays nothing.
 */
export function garbageWatch(growthBytes: number): () => void {
  let base = process.memoryUsage.rss()
  return () => {
    if (process.memoryUsage.rss() - base < growthBytes) return
    Bun.gc(true)
    base = process.memoryUsage.rss()
  }
}
