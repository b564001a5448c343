/**
 * Synthetic tracks with closed-form answers. Positions are laid out in local metres (east, north)
 * around an origin and converted with a spherical approximation, independent of src/track;
 * expected lengths are the noise-free metres, so tolerances cover the sphere/ellipsoid difference
 * (under 0.5%).
 */
import type { TrackPoint } from '../../src/track/types'
import { seededRandom } from '../support/random'

const METRES_PER_DEGREE = (6371008.8 * Math.PI) / 180

export type Noise = (random: () => number) => [number, number]

/** No noise. */
export const exact: Noise = () => [0, 0]

/** Independent uniform noise in ±m metres on each axis. */
export function uniform(m: number): Noise {
  return (rnd) => [(rnd() * 2 - 1) * m, (rnd() * 2 - 1) * m]
}

/**
 * Correlated noise, as receivers really wander: each axis an AR(1) process with standard
 * deviation `sigma` metres and correlation `rho` from one fix to the next.
 */
export function wandering(sigma: number, rho: number): Noise {
  let ex = 0
  let ey = 0
  const k = Math.sqrt(1 - rho * rho)
  return (rnd) => {
    const gauss = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd())
    ex = rho * ex + k * sigma * gauss()
    ey = rho * ey + k * sigma * gauss()
    return [ex, ey]
  }
}

export class TrackBuilder {
  readonly points: TrackPoint[] = []
  /** true position, metres east and north of the origin */
  east = 0
  north = 0
  time: number
  private readonly rnd: () => number

  constructor(
    readonly originLat = 52.66,
    readonly originLon = -8.63,
    startTime = 1_700_000_000,
    seed = 1,
  ) {
    this.time = startTime
    this.rnd = seededRandom(seed)
  }

  /** latitude/longitude of a local position */
  toLatLon(east: number, north: number): [number, number] {
    const lat = this.originLat + north / METRES_PER_DEGREE
    const lon = this.originLon + east / (METRES_PER_DEGREE * Math.cos((this.originLat * Math.PI) / 180))
    return [lat, lon]
  }

  /** Emit a fix at the current time and true position plus the given offset. */
  fix(offsetEast = 0, offsetNorth = 0, speed: number | null = null): this {
    const [latitude, longitude] = this.toLatLon(this.east + offsetEast, this.north + offsetNorth)
    this.points.push({ timestamp: this.time, latitude, longitude, speed })
    return this
  }

  /**
   * Move at `speed` m/s on `bearing` degrees for `seconds`, one fix every `interval` seconds
   * (the first one `interval` after now). `reportSpeed` puts the true speed (km/h) on the fixes.
   */
  move(bearing: number, speed: number, seconds: number, interval = 1, noise: Noise = exact, reportSpeed = false): this {
    const dx = Math.sin((bearing * Math.PI) / 180) * speed
    const dy = Math.cos((bearing * Math.PI) / 180) * speed
    for (let t = interval; t <= seconds + 1e-9; t += interval) {
      this.east += dx * interval
      this.north += dy * interval
      this.time += interval
      const [ex, ey] = noise(this.rnd)
      this.fix(ex, ey, reportSpeed ? speed * 3.6 : null)
    }
    return this
  }

  /** Stand still for `seconds`, one fix every `interval` seconds (the first one `interval` after now). */
  park(seconds: number, interval = 1, noise: Noise = exact): this {
    return this.move(0, 0, seconds, interval, noise)
  }

  /** Let time pass without fixes (the device stays where it is). */
  quiet(seconds: number): this {
    this.time += seconds
    return this
  }
}
