/**
 * The Reports page's charts, drawn by uPlot as the History view's speed chart is (imported when
 * the first chart is drawn): distance per day as bars, a route's speed over time as a line.
 */
import type uPlot from 'uplot'
import { dayInWords, localTime } from './reports'

export interface ReportChart {
  resize(width: number): void
  destroy(): void
}

const HEIGHT = 200
const axis = { stroke: '#3d444d', grid: { stroke: '#eaeef2', width: 1 }, ticks: { stroke: '#d0d7de', width: 1 } }

function wrap(chart: uPlot): ReportChart {
  return {
    resize: (width) => chart.setSize({ width: Math.max(200, width), height: HEIGHT }),
    destroy: () => chart.destroy(),
  }
}

/** bars of km, one per local day (days YYYY-MM-DD) */
export async function drawDistanceChart(container: HTMLElement, days: string[], km: number[]): Promise<ReportChart> {
  const { default: UPlot } = await import('uplot')
  const x = days.map((_, i) => i)
  const chart = new UPlot(
    {
      width: Math.max(200, container.clientWidth),
      height: HEIGHT,
      legend: { show: false },
      cursor: { show: false },
      scales: { x: { time: false, range: () => [-0.6, days.length - 0.4] }, y: { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.15))] } },
      series: [{}, { label: 'km', stroke: '#1756a9', fill: 'rgba(23, 86, 169, 0.55)', width: 1, paths: UPlot.paths.bars!({ size: [0.7, 80] }), points: { show: false } }],
      axes: [
        { ...axis, splits: () => x, values: (_u, splits) => splits.map((i) => (days[i] ? dayInWords(days[i]).replace(/ \d{4}$/, '') : '')) },
        { ...axis, size: 48, label: 'km', labelSize: 16 },
      ],
    },
    [x, km],
    container,
  )
  return wrap(chart)
}

/** a device's speed (km/h) over time (Unix seconds), its local times in the report's zone */
export async function drawSpeedOverTime(container: HTMLElement, time: number[], speed: (number | null)[], zone: string): Promise<ReportChart> {
  const { default: UPlot } = await import('uplot')
  const chart = new UPlot(
    {
      width: Math.max(200, container.clientWidth),
      height: HEIGHT,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, Math.max(10, Math.ceil((max * 1.1) / 10) * 10)] } },
      series: [{}, { label: 'km/h', stroke: '#1756a9', width: 1.5, fill: 'rgba(23, 86, 169, 0.12)', spanGaps: false, points: { show: false } }],
      axes: [
        { ...axis, space: 90, values: (_u, splits) => splits.map((seconds) => localTime(seconds, zone).replace(/^.*[ ,]\s*/, '')) },
        { ...axis, size: 44, label: 'km/h', labelSize: 16 },
      ],
    },
    [time, speed],
    container,
  )
  return wrap(chart)
}
