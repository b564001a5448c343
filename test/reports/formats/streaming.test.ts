import { describe, expect, test } from 'bun:test'
import { renderReport } from '../../../src/reports/formats'
import type { ReportRow } from '../../../src/reports/types'
import { column, document, utc } from './support'

const ROWS = 100_000
const columns = [
  column('device', 'text'),
  column('alias', 'text'),
  column('timestamp', 'time'),
  column('latitude', 'number'),
  column('longitude', 'number'),
  column('altitude_m', 'number'),
]

/** A 100,000-fix route produced lazily, counting the rows the writer has pulled. */
function lazyRoute() {
  const counter = { pulled: 0 }
  async function* rows(): AsyncGenerator<ReportRow> {
    for (let i = 0; i < ROWS; i++) {
      counter.pulled++
      yield { device: `dev-${Math.floor(i / 25_000)}`, alias: `Van ${Math.floor(i / 25_000)}`, timestamp: utc(2026, 11, 2) + i * 5, latitude: 53 + i / 1e6, longitude: -6 - i / 1e6, altitude_m: i % 100 }
    }
  }
  return { counter, route: document({ kind: 'route', columns, rows: rows(), tz: 'Europe/Dublin' }) }
}

const CRLF = [13, 10]
const LF = 10

describe('report files stream', () => {
  for (const format of ['csv', 'gpx'] as const) {
    test(`a 100,000-row ${format} arrives in pieces, each written from rows pulled just before it, never the whole file at once`, async () => {
      const { counter, route } = lazyRoute()
      const reader = renderReport(route, format).body.getReader()
      let bytes = 0
      let lines = 0
      let chunks = 0
      let largestChunk = 0
      let mostRowsAhead = 0
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        chunks++
        bytes += value.byteLength
        largestChunk = Math.max(largestChunk, value.byteLength)
        for (let i = 0; i < value.length; i++) {
          if (format === 'csv' ? value[i] === CRLF[1] && value[i - 1] === CRLF[0] : value[i] === LF) lines++
        }
        // rows the writer has pulled but the reader has not yet seen in a line
        mostRowsAhead = Math.max(mostRowsAhead, counter.pulled - lines)
      }
      expect(counter.pulled).toBe(ROWS)
      // csv: the header and a line per fix; gpx: xml declaration, <gpx>, <metadata>, 4 tracks opened and closed, </gpx>
      expect(lines).toBe(format === 'csv' ? ROWS + 1 : ROWS + 3 + 4 * 2 + 1)
      expect(chunks).toBeGreaterThan(50)
      expect(largestChunk).toBeLessThan(256 * 1024)
      expect(bytes).toBeGreaterThan(ROWS * 40)
      expect(mostRowsAhead).toBeLessThan(2_000)
    })
  }
})
