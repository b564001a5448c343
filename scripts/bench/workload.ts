/**
 * The ingest benches' workload (scripts/bench/ingest.ts on SQLite, pg.ts on PostgreSQL): vehicles
 * reporting together, one fix every 10 s, `reportSize` fixes to a report (as a Teltonika packet
 * brings them), a week ago. Report r is device r % devices; floors and products take the reports
 * in this order.
 */
import type { DecodedFix } from '../../src/ingest/types'

/** `count` devices' identifiers: IMEIs from `imeiBase`, serials `S0`, `S1`, … */
export const fleet = (count: number, imeiBase: number, serialPrefix = 'S') =>
  Array.from({ length: count }, (_, i) => ({ imei: String(imeiBase + i), serial: `${serialPrefix}${i}` }))

export interface Workload {
  /** how many reports make up the fixes asked for */
  reports: number
  /** the first fix's time, Unix s */
  startSeconds: number
  reportAt(r: number): { device: number; fixes: DecodedFix[] }
}

export function ingestWorkload({ fixes, devices, reportSize }: { fixes: number; devices: number; reportSize: number }): Workload {
  const startSeconds = Math.floor(Date.now() / 1000) - 7 * 86_400
  return {
    reports: Math.ceil(fixes / reportSize),
    startSeconds,
    reportAt(r) {
      const device = r % devices
      const first = Math.floor(r / devices) * reportSize
      const list: DecodedFix[] = []
      for (let step = first; step < first + reportSize; step++) {
        list.push({
          timestamp: startSeconds + step * 10,
          latitude: 53.4 + device * 0.01 + Math.sin(step / 50) * 0.01,
          longitude: -2.9 + device * 0.01 + Math.cos(step / 50) * 0.01,
          speed: (step % 90) + 0.4,
          course: (step * 7) % 360,
          altitude: 20 + (step % 40),
          satellites: 8 + (step % 5),
          valid: true,
          attributes: {},
        })
      }
      return { device, fixes: list }
    },
  }
}
