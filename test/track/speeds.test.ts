import { describe, expect, test } from 'bun:test'
import { fillMissingSpeeds, metresBetween } from '../../src/track'

describe('fillMissingSpeeds', () => {
  test('a point without a speed gets the speed from the previous point; reported speeds stay', () => {
    const points = [
      { timestamp: 100, latitude: 48, longitude: 2, speed: null },
      { timestamp: 110, latitude: 48.001, longitude: 2, speed: null },
      { timestamp: 120, latitude: 48.002, longitude: 2, speed: 17 },
      { timestamp: 120, latitude: 48.003, longitude: 2, speed: null },
    ]
    const filled = fillMissingSpeeds(points)
    expect(filled[0].speed).toBe(0) // nothing before it
    expect(filled[1].speed).toBeCloseTo((metresBetween(48, 2, 48.001, 2) / 10) * 3.6, 6) // ≈ 40 km/h
    expect(filled[1].speed).toBeGreaterThan(39)
    expect(filled[2].speed).toBe(17)
    expect(filled[3].speed).toBe(0) // same second: no speed to derive
  })
})
