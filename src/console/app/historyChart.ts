/**
 * The speed-over-time chart under the History view's map, drawn by uPlot (canvas: a day at 1 Hz
 * is 86,400 points). uPlot is imported when the first chart is drawn, so that a bundle split into
 * chunks keeps it out of the first load. The playback's moment is a vertical line; choosing a
 * point of the chart moves the playback there.
 */
import type uPlot from 'uplot'
import { lineRuns, PLAYBACK_SKIP_GAP_S, type Track } from './history'
import { strings } from './strings'

export interface SpeedChart {
  setPlayback(seconds: number): void
  resize(width: number): void
  destroy(): void
}

const HEIGHT = 160

/**
 * x (seconds) and speeds, with a break (a null: uPlot draws no line across it) at each of the
 * server's reporting gaps and wherever the device did not report for a while.
 */
function series(track: Track): [number[], (number | null)[]] {
  const x: number[] = []
  const y: (number | null)[] = []
  for (const [first, last] of lineRuns(track)) {
    for (let i = first; i <= last; i++) {
      if (i > 0 && (i === first || track.time[i] - track.time[i - 1] > PLAYBACK_SKIP_GAP_S)) {
        x.push(track.time[i - 1] + 1)
        y.push(null)
      }
      x.push(track.time[i])
      y.push(Math.round(track.speed[i] * 10) / 10)
    }
  }
  return [x, y]
}

/** the x axis in the browser's words and zone, as the rest of the view: times, and the date at midnight or over many days */
function timeLabels(splits: number[], spanS: number): string[] {
  return splits.map((seconds) => {
    const date = new Date(seconds * 1000)
    const midnight = date.getHours() === 0 && date.getMinutes() === 0
    return spanS > 2 * 86_400 || midnight
      ? date.toLocaleDateString([], { day: 'numeric', month: 'short' })
      : date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
  })
}

export async function drawSpeedChart(container: HTMLElement, track: Track, onPick: (seconds: number) => void): Promise<SpeedChart> {
  const { default: UPlot } = await import('uplot')
  let playbackAt: number | null = null
  const drawPlayback = (u: uPlot) => {
    if (playbackAt === null) return
    const x = Math.round(u.valToPos(playbackAt, 'x', true))
    const { ctx, bbox } = u
    ctx.save()
    ctx.strokeStyle = '#c24e00'
    ctx.lineWidth = 2 * devicePixelRatio
    ctx.beginPath()
    ctx.moveTo(x, bbox.top)
    ctx.lineTo(x, bbox.top + bbox.height)
    ctx.stroke()
    ctx.restore()
  }
  // The server's reporting gaps: shaded under the grid (drawClear), named over it (draw). No data,
  // which a blank stretch alone would not tell from a stop with few fixes.
  const gapSpans = (u: uPlot) => {
    const { bbox } = u
    return track.gaps
      .map((gap) => [Math.max(bbox.left, Math.round(u.valToPos(gap.start, 'x', true))), Math.min(bbox.left + bbox.width, Math.round(u.valToPos(gap.end, 'x', true)))])
      .filter(([left, right]) => right > left)
  }
  const shadeGaps = (u: uPlot) => {
    const { ctx, bbox } = u
    ctx.save()
    ctx.fillStyle = 'rgba(101, 109, 118, 0.14)'
    for (const [left, right] of gapSpans(u)) ctx.fillRect(left, bbox.top, right - left, bbox.height)
    ctx.restore()
  }
  const nameGaps = (u: uPlot) => {
    const { ctx, bbox } = u
    const label = strings.historyChartNoData
    ctx.save()
    ctx.font = `${12 * devicePixelRatio}px system-ui, sans-serif`
    ctx.textAlign = 'center'
    ctx.textBaseline = 'middle'
    const width = ctx.measureText(label).width + 8 * devicePixelRatio
    const height = 16 * devicePixelRatio
    for (const [left, right] of gapSpans(u)) {
      if (right - left < width + 8 * devicePixelRatio) continue
      const [x, y] = [(left + right) / 2, bbox.top + bbox.height / 2]
      ctx.fillStyle = '#ecedef' // the shade over white, opaque: the grid does not cross the word
      ctx.fillRect(x - width / 2, y - height / 2, width, height)
      ctx.fillStyle = '#57606a'
      ctx.fillText(label, x, y)
    }
    ctx.restore()
  }
  const axis = { stroke: '#3d444d', grid: { stroke: '#eaeef2', width: 1 }, ticks: { stroke: '#d0d7de', width: 1 } }
  const chart = new UPlot(
    {
      width: Math.max(200, container.clientWidth),
      height: HEIGHT,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { size: 7 } },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(10, Math.ceil((max * 1.1) / 10) * 10)] } },
      series: [
        {},
        {
          label: strings.historyChartSpeed,
          stroke: '#1756a9',
          width: 1.5,
          fill: 'rgba(23, 86, 169, 0.12)',
          spanGaps: false,
          points: { show: false },
        },
      ],
      axes: [
        { ...axis, space: 70, values: (u, splits) => timeLabels(splits, (u.scales.x.max ?? 0) - (u.scales.x.min ?? 0)) },
        { ...axis, size: 44, label: 'km/h', labelSize: 16, values: (_u, values) => values.map((v) => String(v)) },
      ],
      hooks: { drawClear: [shadeGaps], draw: [nameGaps, drawPlayback] },
    },
    series(track),
    container,
  )
  chart.over.addEventListener('click', () => {
    const left = chart.cursor.left
    if (left === undefined || left < 0) return
    onPick(chart.posToVal(left, 'x'))
  })
  return {
    setPlayback(seconds) {
      playbackAt = seconds
      chart.redraw(false, false)
    },
    resize(width) {
      chart.setSize({ width: Math.max(200, width), height: HEIGHT })
    },
    destroy() {
      chart.destroy()
    },
  }
}
