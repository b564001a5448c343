import { describe, expect, test } from 'bun:test'
import {
  decodeOsmandJson,
  decodeOsmandParams,
  OSMAND_MAX_EXTRA_ATTRIBUTES,
  type OsmandResult,
} from '../../../../src/ingest/protocols/osmand/decoder'
import type { DecodedReport } from '../../../../src/ingest/types'
import { seededRandom } from '../helpers'

const NOW = 1_710_000_000

function query(text: string): URLSearchParams {
  return new URLSearchParams(text)
}

function ok(result: OsmandResult): DecodedReport {
  if (!result.ok) throw new Error(`expected ok, got ${JSON.stringify(result.error)}`)
  return result.report
}

function errorOf(result: OsmandResult): { parameter: string; message: string } {
  if (result.ok) throw new Error(`expected an error, got ${JSON.stringify(result.report)}`)
  return result.error
}

describe('OsmAnd parameters', () => {
  test('the classic Traccar Client request (quoted in traccar-client issue #85)', () => {
    const report = ok(
      decodeOsmandParams(
        query('id=82879256&lat=-35.5555277&lon=145.5555733&timestamp=1693222306574&speed=0.211914&bearing=26.21394&accuracy=22.975999'),
        NOW,
      ),
    )
    expect(report.uniqueId).toBe('82879256')
    expect(report.events).toEqual([])
    const [fix] = report.fixes
    expect(fix.timestamp).toBe(1693222306) // milliseconds detected
    expect(fix.latitude).toBe(-35.5555277)
    expect(fix.longitude).toBe(145.5555733)
    expect(fix.speed).toBeCloseTo(0.211914 * 1.852, 9) // knots → km/h
    expect(fix.course).toBeCloseTo(26.21394, 9)
    expect(fix.altitude).toBeNull()
    expect(fix.satellites).toBeNull()
    expect(fix.valid).toBe(true)
    expect(fix.attributes).toEqual({ accuracy: 22.975999 })
  })

  test('full parameter set, from a plain object as a form body parser gives it', () => {
    const report = ok(
      decodeOsmandParams(
        {
          deviceid: 'phone-7',
          lat: '48.8566',
          lon: '2.3522',
          timestamp: '1710000123',
          speed: '10',
          heading: '90',
          altitude: '35.5',
          accuracy: '4',
          hdop: '0.9',
          batt: '87.0',
          charge: 'true',
          driverUniqueId: 'D42',
          ignition: 'false',
          fuel: '12.5',
        },
        NOW,
      ),
    )
    expect(report.uniqueId).toBe('phone-7')
    expect(report.fixes[0]).toEqual({
      timestamp: 1710000123,
      latitude: 48.8566,
      longitude: 2.3522,
      speed: 18.52,
      course: 90,
      altitude: 35.5,
      satellites: null,
      valid: true,
      attributes: {
        accuracy: 4,
        hdop: 0.9,
        battery_level: 87,
        charging: true,
        driverUniqueId: 'D42',
        ignition: false,
        fuel: 12.5,
      },
    })
  })

  test('location=lat,lon', () => {
    const fix = ok(decodeOsmandParams(query('id=1&location=-33.8688,151.2093'), NOW)).fixes[0]
    expect([fix.latitude, fix.longitude]).toEqual([-33.8688, 151.2093])
  })

  test('missing timestamp → injected now', () => {
    expect(ok(decodeOsmandParams(query('id=1&lat=1&lon=2'), NOW)).fixes[0].timestamp).toBe(NOW)
    expect(ok(decodeOsmandParams(query('id=1&lat=1&lon=2&timestamp='), NOW)).fixes[0].timestamp).toBe(NOW)
  })

  test('timestamp formats', () => {
    const at = (timestamp: string) =>
      ok(decodeOsmandParams(new URLSearchParams({ id: '1', lat: '1', lon: '2', timestamp }), NOW)).fixes[0].timestamp
    const expected = Date.UTC(2024, 2, 15, 8, 30, 5) / 1000
    expect(at(String(expected))).toBe(expected)
    expect(at(String(expected * 1000))).toBe(expected)
    expect(at(`${expected}.75`)).toBe(expected)
    expect(at('2024-03-15T08:30:05Z')).toBe(expected)
    expect(at('2024-03-15T08:30:05.250Z')).toBe(expected)
    expect(at('2024-03-15T10:30:05+02:00')).toBe(expected)
    expect(at('2024-03-15T08:30:05')).toBe(expected) // no zone: UTC, not server local time
    expect(at('2024-03-15 08:30:05')).toBe(expected)
  })

  test('an unencoded "+" offset in a raw query string still parses', () => {
    const fix = ok(decodeOsmandParams(query('id=1&lat=1&lon=2&timestamp=2024-03-15T10:30:05+02:00'), NOW)).fixes[0]
    expect(fix.timestamp).toBe(Date.UTC(2024, 2, 15, 8, 30, 5) / 1000)
  })

  test('valid=false / 0 / true', () => {
    const valid = (v: string) => ok(decodeOsmandParams(query(`id=1&lat=1&lon=2&valid=${v}`), NOW)).fixes[0].valid
    expect([valid('false'), valid('0'), valid('true'), valid('1')]).toEqual([false, false, true, true])
    expect(errorOf(decodeOsmandParams(query('id=1&lat=1&lon=2&valid=maybe'), NOW)).parameter).toBe('valid')
  })

  test('negative speed and bearing mean unknown', () => {
    const fix = ok(decodeOsmandParams(query('id=1&lat=1&lon=2&speed=-1&bearing=-1'), NOW)).fixes[0]
    expect(fix.speed).toBeNull()
    expect(fix.course).toBeNull()
  })

  test('alarm=sos becomes an event; event= stays an attribute', () => {
    const report = ok(
      decodeOsmandParams(query('id=1&lat=48.85&lon=2.35&timestamp=1710000000&speed=5&alarm=sos&event=motionchange&mcc=208&mnc=1'), NOW),
    )
    expect(report.fixes[0].attributes).toMatchObject({ alarm: 'sos', event: 'motionchange', mcc: 208, mnc: 1 })
    expect(report.events).toEqual([
      {
        timestamp: 1710000000,
        alarmCode: 'sos',
        latitude: 48.85,
        longitude: 2.35,
        speed: 5 * 1.852,
        satellites: null,
        mcc: 208,
        mnc: 1,
        dbm: null,
        context: { gps_valid: true, course: null, altitude: null },
      },
    ])
  })

  test('alarm codes are normalised to lower_snake_case; an invalid fix gives no coordinates', () => {
    const report = ok(decodeOsmandParams(query('id=1&lat=1&lon=2&valid=0&alarm=Power%20Cut'), NOW))
    expect(report.events[0]).toMatchObject({ alarmCode: 'power_cut', latitude: null, longitude: null })
    const camel = ok(decodeOsmandParams(query('id=1&lat=1&lon=2&alarm=lowBattery'), NOW))
    expect(camel.events[0].alarmCode).toBe('low_battery')
    expect(ok(decodeOsmandParams(query('id=1&lat=1&lon=2&alarm='), NOW)).events).toEqual([])
    expect(errorOf(decodeOsmandParams(query('id=1&lat=1&lon=2&alarm=%21%21'), NOW)).parameter).toBe('alarm')
  })

  test('an alarm the product does not list is `alarm` with the value sent as raw_alarm; Traccar synonyms take our name; server codes cannot be forged', () => {
    const invented = ok(decodeOsmandParams(query('id=1&lat=48.85&lon=2.35&timestamp=1710000000&alarm=fuelTheft'), NOW))
    expect(invented.events).toHaveLength(1)
    expect(invented.events[0]).toMatchObject({ alarmCode: 'alarm', context: { raw_alarm: 'fuelTheft', gps_valid: true } })
    expect(invented.fixes[0].attributes.alarm).toBe('alarm')
    const forged = ok(decodeOsmandParams(query('id=1&lat=1&lon=2&alarm=device_offline'), NOW))
    expect(forged.events[0]).toMatchObject({ alarmCode: 'alarm', context: { raw_alarm: 'device_offline' } })
    const synonym = ok(decodeOsmandParams(query('id=1&lat=1&lon=2&alarm=hardBraking'), NOW))
    expect(synonym.events[0].alarmCode).toBe('harsh_braking')
    expect(synonym.events[0].context).not.toHaveProperty('raw_alarm')
    // the JSON body of Traccar Client: the same rule, at the top level and in extras
    const json = ok(
      decodeOsmandJson({ device_id: '1', alarm: 'Coolant Hot', location: { timestamp: '2024-03-09T16:00:00Z', coords: { latitude: 1, longitude: 2 } } }, NOW),
    )
    expect(json.events[0]).toMatchObject({ alarmCode: 'alarm', context: { raw_alarm: 'Coolant Hot' } })
    const extras = ok(
      decodeOsmandJson({ device_id: '1', location: { timestamp: '2024-03-09T16:00:00Z', coords: { latitude: 1, longitude: 2 }, extras: { alarm: 'sos' } } }, NOW),
    )
    expect(extras.events[0].alarmCode).toBe('sos')
  })

  test('errors name the parameter', () => {
    const cases: Array<[string, string]> = [
      ['lat=1&lon=2', 'deviceid'],
      ['id=&lat=1&lon=2', 'id'],
      ['id=1', 'lat'],
      ['id=1&lat=1', 'lon'],
      ['id=1&lat=abc&lon=2', 'lat'],
      ['id=1&lat=0x10&lon=2', 'lat'],
      ['id=1&lat=91&lon=2', 'lat'],
      ['id=1&lat=1&lon=-180.5', 'lon'],
      ['id=1&lat=1&lon=Infinity', 'lon'],
      ['id=1&location=1', 'location'],
      ['id=1&location=1,x', 'location'],
      ['id=1&lat=1&lon=2&timestamp=yesterday', 'timestamp'],
      ['id=1&lat=1&lon=2&timestamp=2024-13-45T99:00:00Z', 'timestamp'],
      ['id=1&lat=1&lon=2&timestamp=-5', 'timestamp'],
      ['id=1&lat=1&lon=2&speed=fast', 'speed'],
      ['id=1&lat=1&lon=2&bearing=north', 'bearing'],
      ['id=1&lat=1&lon=2&altitude=high', 'altitude'],
      ['id=1&lat=1&lon=2&accuracy=good', 'accuracy'],
      ['id=1&lat=1&lon=2&batt=full', 'batt'],
      ['id=1&lat=1&lon=2&charge=perhaps', 'charge'],
    ]
    for (const [text, parameter] of cases) {
      const error = errorOf(decodeOsmandParams(query(text), NOW))
      expect({ text, parameter: error.parameter }).toEqual({ text, parameter })
      expect(error.message).toContain(parameter)
    }
  })

  test('too many extra parameters is an error, not an unbounded attribute bag', () => {
    const params = new URLSearchParams({ id: '1', lat: '1', lon: '2' })
    for (let i = 0; i <= OSMAND_MAX_EXTRA_ATTRIBUTES; i++) params.set(`k${i}`, 'v')
    expect(errorOf(decodeOsmandParams(params, NOW)).message).toContain('more than')
  })

  test('the first of a repeated parameter wins; __proto__ is not an attribute', () => {
    const report = ok(decodeOsmandParams(query('id=a&id=b&lat=1&lon=2&__proto__=x'), NOW))
    expect(report.uniqueId).toBe('a')
    expect(Object.keys(report.fixes[0].attributes)).toEqual([])
  })
})

describe('Traccar Client JSON', () => {
  /** The body quoted in traccar-client issue #85 (client 9.5.3). */
  const CLIENT_BODY = {
    location: {
      timestamp: '2025-08-28T11:51:46.587Z',
      coords: { latitude: -37.6998277, longitude: 145.0686733, accuracy: 4.32, speed: 0.11, heading: 158.44, altitude: 103 },
      is_moving: true,
      odometer: 0,
      battery: { level: 0.88, is_charging: false },
      activity: { type: 'still' },
    },
    device_id: '82879256',
  }

  test('the documented body', () => {
    const report = ok(decodeOsmandJson(CLIENT_BODY, NOW))
    expect(report.uniqueId).toBe('82879256')
    expect(report.events).toEqual([])
    const [fix] = report.fixes
    expect(fix.timestamp).toBe(Date.UTC(2025, 7, 28, 11, 51, 46) / 1000)
    expect(fix.latitude).toBe(-37.6998277)
    expect(fix.longitude).toBe(145.0686733)
    expect(fix.speed).toBeCloseTo(0.11 * 3.6, 9) // m/s → km/h
    expect(fix.course).toBe(158.44)
    expect(fix.altitude).toBe(103)
    expect(fix.valid).toBe(true)
    expect(fix.attributes).toEqual({
      accuracy: 4.32,
      movement: true,
      odometer: 0,
      battery_level: 88,
      charging: false,
      activity: 'still',
    })
  })

  test('event, extras, mock, unknown battery level and -1 speed/heading', () => {
    const body = {
      device_id: 'p1',
      location: {
        timestamp: '2025-08-28T11:51:46Z',
        coords: { latitude: 1, longitude: 2, speed: -1, heading: -1 },
        event: 'motionchange',
        battery: { level: -1 },
        mock: true,
        extras: { trip: 'T-9', nested: { ignored: true }, accuracy: 999 },
      },
    }
    const fix = ok(decodeOsmandJson(body, NOW)).fixes[0]
    expect(fix.speed).toBeNull()
    expect(fix.course).toBeNull()
    expect(fix.attributes).toEqual({ trip: 'T-9', accuracy: 999, event: 'motionchange', mock: true })
  })

  test('a missing location timestamp uses now', () => {
    const body = { device_id: 'p1', location: { coords: { latitude: 1, longitude: 2 } } }
    expect(ok(decodeOsmandJson(body, NOW)).fixes[0].timestamp).toBe(NOW)
  })

  test('alarm: top level or in extras, as an event', () => {
    const top = ok(decodeOsmandJson({ ...CLIENT_BODY, alarm: 'sos' }, NOW))
    expect(top.events).toHaveLength(1)
    expect(top.events[0]).toMatchObject({ alarmCode: 'sos', latitude: -37.6998277, speed: 0.11 * 3.6 })
    const extras = ok(
      decodeOsmandJson({ device_id: 'p1', location: { coords: { latitude: 1, longitude: 2 }, extras: { alarm: 'fall' } } }, NOW),
    )
    expect(extras.events.map((e) => e.alarmCode)).toEqual(['fall'])
    expect(extras.fixes[0].attributes.alarm).toBe('fall')
  })

  test('batched: location as an array, or a locations array', () => {
    const one = (latitude: number, second: number) => ({
      timestamp: new Date(Date.UTC(2025, 0, 1, 0, 0, second)).toISOString(),
      coords: { latitude, longitude: 2 },
    })
    const asArray = ok(decodeOsmandJson({ device_id: 'p1', location: [one(1, 0), one(2, 10)], alarm: 'sos' }, NOW))
    expect(asArray.fixes.map((f) => f.latitude)).toEqual([1, 2])
    // a request-level alarm belongs to the newest location only
    expect(asArray.events).toHaveLength(1)
    expect(asArray.events[0].latitude).toBe(2)
    const plural = ok(decodeOsmandJson({ device_id: 'p1', locations: [one(3, 0), one(4, 5), one(5, 9)] }, NOW))
    expect(plural.fixes.map((f) => f.latitude)).toEqual([3, 4, 5])
  })

  test('numeric strings and id aliases are tolerated', () => {
    const report = ok(decodeOsmandJson({ id: 42, location: { coords: { latitude: '1.5', longitude: '2.5' } } }, NOW))
    expect(report.uniqueId).toBe('42')
    expect([report.fixes[0].latitude, report.fixes[0].longitude]).toEqual([1.5, 2.5])
  })

  test('errors name the JSON path', () => {
    const coords = { latitude: 1, longitude: 2 }
    const cases: Array<[unknown, string]> = [
      [null, 'body'],
      [[], 'body'],
      ['text', 'body'],
      [{ location: { coords } }, 'deviceid'],
      [{ device_id: '  ', location: { coords } }, 'device_id'],
      [{ device_id: 'p' }, 'location'],
      [{ device_id: 'p', location: [] }, 'location'],
      [{ device_id: 'p', location: 'here' }, 'location'],
      [{ device_id: 'p', location: {} }, 'location.coords'],
      [{ device_id: 'p', location: { coords: [] } }, 'location.coords'],
      [{ device_id: 'p', location: { coords: { longitude: 2 } } }, 'location.coords.latitude'],
      [{ device_id: 'p', location: { coords: { latitude: 1, longitude: 'east' } } }, 'location.coords.longitude'],
      [{ device_id: 'p', location: { coords: { latitude: 100, longitude: 2 } } }, 'location.coords.latitude'],
      [{ device_id: 'p', location: { coords: { ...coords, speed: 'fast' } } }, 'location.coords.speed'],
      [{ device_id: 'p', location: { coords, timestamp: 'soon' } }, 'location.timestamp'],
      [{ device_id: 'p', location: { coords, battery: 5 } }, 'location.battery'],
      [{ device_id: 'p', location: { coords, battery: { level: 'half' } } }, 'location.battery.level'],
      [{ device_id: 'p', location: { coords, is_moving: 'yes' } }, 'location.is_moving'],
      [{ device_id: 'p', location: [{ coords }, { coords: { latitude: 1 } }] }, 'location[1].coords.longitude'],
      [{ device_id: 'p', locations: [{ coords }, 7] }, 'locations[1]'],
      [{ device_id: 'p', location: { coords }, alarm: 5 }, 'alarm'],
    ]
    for (const [body, parameter] of cases) {
      const error = errorOf(decodeOsmandJson(body, NOW))
      expect({ body, parameter: error.parameter }).toEqual({ body, parameter })
    }
  })

  test('property: random JSON-ish bodies never throw', () => {
    const random = seededRandom(5)
    const leaves = [null, 0, -1, 1.5, 'x', '', '1', true, [], {}, 1e300, '2024-01-01T00:00:00Z']
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]
    const build = (depth: number): unknown => {
      if (depth === 0 || random() < 0.3) return pick(leaves)
      const keys = ['device_id', 'location', 'locations', 'coords', 'latitude', 'longitude', 'speed', 'battery', 'level', 'extras', 'alarm', 'timestamp']
      if (random() < 0.2) return Array.from({ length: Math.floor(random() * 3) }, () => build(depth - 1))
      return Object.fromEntries(Array.from({ length: Math.floor(random() * 5) }, () => [pick(keys), build(depth - 1)]))
    }
    for (let i = 0; i < 3000; i++) {
      const result = decodeOsmandJson(build(5), NOW)
      expect(typeof result.ok).toBe('boolean')
    }
  })
})
