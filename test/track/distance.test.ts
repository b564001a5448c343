import { describe, expect, test } from 'bun:test'
import { measureMovement, pathLength } from '../../src/track/distance'
import { FIX_NEW_SEGMENT, filterFixes } from '../../src/track/filters'
import { metresBetween, wrapLongitude } from '../../src/track/geo'
import type { TrackPoint } from '../../src/track/types'
import { haversine } from './recordings'
import { TrackBuilder, uniform, wandering } from './synthetic'

/** Vincenty's inverse formula on the WGS84 ellipsoid: the reference geodesic distance in metres. */
function vincenty(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const a = 6378137
  const f = 1 / 298.257223563
  const b = a * (1 - f)
  const rad = Math.PI / 180
  const L = (lon2 - lon1) * rad
  const U1 = Math.atan((1 - f) * Math.tan(lat1 * rad))
  const U2 = Math.atan((1 - f) * Math.tan(lat2 * rad))
  const sinU1 = Math.sin(U1)
  const cosU1 = Math.cos(U1)
  const sinU2 = Math.sin(U2)
  const cosU2 = Math.cos(U2)
  let lambda = L
  for (let iteration = 0; iteration < 200; iteration++) {
    const sinLambda = Math.sin(lambda)
    const cosLambda = Math.cos(lambda)
    const sinSigma = Math.sqrt((cosU2 * sinLambda) ** 2 + (cosU1 * sinU2 - sinU1 * cosU2 * cosLambda) ** 2)
    if (sinSigma === 0) return 0
    const cosSigma = sinU1 * sinU2 + cosU1 * cosU2 * cosLambda
    const sigma = Math.atan2(sinSigma, cosSigma)
    const sinAlpha = (cosU1 * cosU2 * sinLambda) / sinSigma
    const cos2Alpha = 1 - sinAlpha * sinAlpha
    const cos2SigmaM = cos2Alpha === 0 ? 0 : cosSigma - (2 * sinU1 * sinU2) / cos2Alpha
    const C = (f / 16) * cos2Alpha * (4 + f * (4 - 3 * cos2Alpha))
    const previous = lambda
    lambda = L + (1 - C) * f * sinAlpha * (sigma + C * sinSigma * (cos2SigmaM + C * cosSigma * (-1 + 2 * cos2SigmaM ** 2)))
    if (Math.abs(lambda - previous) < 1e-12) {
      const u2 = (cos2Alpha * (a * a - b * b)) / (b * b)
      const A = 1 + (u2 / 16384) * (4096 + u2 * (-768 + u2 * (320 - 175 * u2)))
      const B = (u2 / 1024) * (256 + u2 * (-128 + u2 * (74 - 47 * u2)))
      const deltaSigma =
        B *
        sinSigma *
        (cos2SigmaM +
          (B / 4) *
            (cosSigma * (-1 + 2 * cos2SigmaM ** 2) -
              (B / 6) * cos2SigmaM * (-3 + 4 * sinSigma ** 2) * (-3 + 4 * cos2SigmaM ** 2)))
      return b * A * (sigma - deltaSigma)
    }
  }
  throw new Error('vincenty did not converge')
}

/** Metres of movement over the whole track, as the module measures it. */
function moved(points: TrackPoint[]): number {
  const { valid } = filterFixes(points)
  const { cumulative } = measureMovement(points, valid)
  return points.length > 0 ? cumulative[points.length - 1] : 0
}

describe('metresBetween (cheap-ruler per latitude band)', () => {
  test('within 0.05% of Vincenty from 1 m to 20 km, at the equator, mid and high latitudes', () => {
    let worst = 0
    for (const lat of [0.3, 23.5, 45, 52.66, 60, 70]) {
      for (const metres of [1, 10, 100, 1000, 5000, 20000]) {
        for (const bearing of [0, 45, 90, 135]) {
          const dLat = (Math.cos((bearing * Math.PI) / 180) * metres) / 111_000
          const dLon = (Math.sin((bearing * Math.PI) / 180) * metres) / (111_000 * Math.cos((lat * Math.PI) / 180))
          const reference = vincenty(lat, 10, lat + dLat, 10 + dLon)
          const error = Math.abs(metresBetween(lat, 10, lat + dLat, 10 + dLon) / reference - 1)
          worst = Math.max(worst, error)
        }
      }
    }
    console.log(`metresBetween vs Vincenty: worst relative error ${(worst * 100).toFixed(4)}%`)
    expect(worst).toBeLessThan(0.0005)
  })

  test('closer to the ellipsoid than haversine is', () => {
    // 10 km north-south at 52.66°: the meridian is longer than the mean-radius sphere says.
    const reference = vincenty(52.66, -8.63, 52.75, -8.63)
    const ruler = metresBetween(52.66, -8.63, 52.75, -8.63)
    const sphere = haversine(52.66, -8.63, 52.75, -8.63)
    expect(Math.abs(ruler - reference)).toBeLessThan(Math.abs(sphere - reference))
  })

  test('a step across the antimeridian is short', () => {
    const metres = metresBetween(10, 179.9999, 10, -179.9999)
    expect(metres).toBeCloseTo(vincenty(10, 179.9999, 10, 180.0001), 3)
    expect(metres).toBeLessThan(30)
  })
})

describe('movement distance', () => {
  test('an hour parked with ±5 m of jitter at 1 Hz is no movement', () => {
    const points = new TrackBuilder().fix().park(3600, 1, uniform(5)).points
    expect(pathLength(points)).toBeGreaterThan(10_000) // the plain sum is kilometres of noise
    expect(moved(points)).toBe(0)
  })

  test('an hour parked with a wandering receiver (σ 3 m, slowly drifting): at most a few wanders', () => {
    for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
      const points = new TrackBuilder(52.66, -8.63, 1_700_000_000, seed).fix().park(3600, 1, wandering(3, 0.98)).points
      // Now and then it wanders beyond the movement radius, which counts here (about 2% of
      // the plain sum at worst); stop detection takes that back (stops.test.ts).
      expect(moved(points)).toBeLessThan(0.03 * pathLength(points))
    }
  })

  test('a walker at 1.2 m/s for 30 min, 1 fix a second, covers 2160 m', () => {
    const points = new TrackBuilder().fix().move(30, 1.2, 1800).points
    expect(moved(points)).toBeCloseTo(2160, -1)
    expect(Math.abs(moved(points) / 2160 - 1)).toBeLessThan(0.02)
  })

  test('the same walker with a wandering receiver (σ 2 m) is still within 2%', () => {
    const points = new TrackBuilder(52.66, -8.63, 1_700_000_000, 3).fix().move(30, 1.2, 1800, 1, wandering(2, 0.97)).points
    const metres = moved(points)
    console.log(`noisy walker: ${metres.toFixed(0)} m of 2160 (plain sum ${pathLength(points).toFixed(0)} m)`)
    expect(Math.abs(metres / 2160 - 1)).toBeLessThan(0.02)
  })

  test('a slower walker (0.8 m/s, under a metre a fix) is not lost', () => {
    const points = new TrackBuilder().fix().move(200, 0.8, 1800).points
    expect(Math.abs(moved(points) / 1440 - 1)).toBeLessThan(0.02)
  })

  test('a runner at 2.75 m/s, 1 Hz, for 20 min covers 3300 m', () => {
    const exactRun = new TrackBuilder().fix().move(120, 2.75, 1200).points
    expect(Math.abs(moved(exactRun) / 3300 - 1)).toBeLessThan(0.01)
    const noisyRun = new TrackBuilder(52.66, -8.63, 1_700_000_000, 5).fix().move(120, 2.75, 1200, 1, wandering(1.5, 0.97)).points
    const metres = moved(noisyRun)
    console.log(`noisy runner: ${metres.toFixed(0)} m of 3300 (plain sum ${pathLength(noisyRun).toFixed(0)} m)`)
    expect(Math.abs(metres / 3300 - 1)).toBeLessThan(0.03)
  })

  test('a car on a 100 m radius circle at 10 m/s, 1 Hz: curves are followed, not cut', () => {
    const builder = new TrackBuilder().fix()
    const radius = 100
    const seconds = Math.round((2 * Math.PI * radius) / 10)
    for (let t = 1; t <= seconds; t++) builder.move((t * 10 * 180) / (Math.PI * radius), 10, 1)
    const metres = moved(builder.points)
    expect(Math.abs(metres / (seconds * 10) - 1)).toBeLessThan(0.005)
  })

  test('a tracker reporting every 30 s while driving measures the chords between fixes', () => {
    const points = new TrackBuilder().fix().move(45, 12, 1800, 30).points
    expect(Math.abs(moved(points) / pathLength(points) - 1)).toBeLessThan(1e-9)
  })

  test('a spike changes nothing: the distance is the same as without it', () => {
    const clean = new TrackBuilder().fix().move(0, 12, 300).park(120, 1, uniform(3)).move(90, 12, 300).points
    const spiked = clean.map((point) => ({ ...point }))
    spiked[150] = { ...spiked[150], latitude: spiked[150].latitude + 0.45 } // 50 km north
    expect(moved(spiked)).toBe(moved(clean))
  })

  test('running total: non-decreasing, zero at the start, rejected fixes between their neighbours', () => {
    const points = new TrackBuilder().fix().move(0, 12, 60).park(120, 1, uniform(4)).move(1, 1.2, 300, 1, uniform(1)).points
    points[30] = { ...points[30], latitude: 0, longitude: 0 }
    const { valid } = filterFixes(points)
    const { cumulative } = measureMovement(points, valid)
    expect(cumulative[0]).toBe(0)
    for (let i = 1; i < points.length; i++) expect(cumulative[i]).toBeGreaterThanOrEqual(cumulative[i - 1])
    expect(cumulative[30]).toBeGreaterThanOrEqual(cumulative[29])
    expect(cumulative[30]).toBeLessThanOrEqual(cumulative[31])
  })

  test('no distance across a new segment (an impossible jump the filter could not pin on either side)', () => {
    const builder = new TrackBuilder().fix().move(0, 10, 20)
    const before = builder.points.length
    builder.east += 300_000
    builder.move(0, 10, 40)
    const { valid } = filterFixes(builder.points)
    expect(valid[before]).toBe(FIX_NEW_SEGMENT)
    const { cumulative } = measureMovement(builder.points, valid)
    // 20 s before the jump, 39 s after it (the first fix after it is where it landed)
    expect(cumulative[builder.points.length - 1]).toBeCloseTo(590, -1)
  })

  test('empty and single-fix input', () => {
    expect(moved([])).toBe(0)
    expect(moved(new TrackBuilder().fix().points)).toBe(0)
  })
})

describe('wrapLongitude', () => {
  test('folds any difference into [-180, 180) without looping', () => {
    expect(wrapLongitude(0)).toBe(0)
    expect(wrapLongitude(359.5)).toBeCloseTo(-0.5, 9)
    expect(wrapLongitude(-359.5)).toBeCloseTo(0.5, 9)
    expect(wrapLongitude(180)).toBe(-180)
    expect(wrapLongitude(720 + 90)).toBeCloseTo(90, 9)
    expect(wrapLongitude(-1080 - 90)).toBeCloseTo(-90, 9)
    expect(wrapLongitude(1e12)).toBeGreaterThanOrEqual(-180)
    expect(wrapLongitude(Number.NaN)).toBeNaN()
    expect(wrapLongitude(Number.POSITIVE_INFINITY)).toBeNaN()
  })
})
