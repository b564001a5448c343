import { describe, expect, test } from 'bun:test'
import { renderReport } from '../../../src/reports/formats'
import type { ReportRow } from '../../../src/reports/types'
import { asyncRows, childNamed, childrenNamed, column, document, parseXml, textOf, utc } from './support'

const routeColumns = [
  column('device', 'text'),
  column('alias', 'text'),
  column('timestamp', 'time'),
  column('latitude', 'number'),
  column('longitude', 'number'),
  column('speed_kmh', 'number'),
  column('course', 'number'),
  column('altitude_m', 'number'),
  column('satellites', 'integer'),
  column('attributes', 'json'),
]

const fixes: ReportRow[] = [
  { device: 'dev-1', alias: 'Van <1> & "co"', timestamp: utc(2026, 10, 25, 0, 30), latitude: 53.349805, longitude: -6.26031, speed_kmh: 40, course: 90, altitude_m: 12.5, satellites: 9, attributes: {} },
  { device: 'dev-1', alias: 'Van <1> & "co"', timestamp: utc(2026, 10, 25, 1, 30, 5), latitude: 53.35, longitude: -6.25, speed_kmh: 0, course: 0, altitude_m: null, satellites: null, attributes: null },
  { device: 'dev-1', alias: 'Van <1> & "co"', timestamp: utc(2026, 10, 25, 1, 31), latitude: null, longitude: null, speed_kmh: null, course: null, altitude_m: null, satellites: null, attributes: null },
  { device: 'dev-2', alias: 'Truck', timestamp: utc(2026, 11, 2, 7, 15), latitude: -33.8688, longitude: 151.2093, speed_kmh: 10, course: 180, altitude_m: 3, satellites: 5, attributes: null },
]

describe('GPX and KML route files', () => {
  test('GPX 1.1: one trk per device, trkpt lat/lon, ele when known, time in UTC, names escaped, fixes without a place left out', async () => {
    const file = renderReport(document({ kind: 'route', columns: routeColumns, rows: asyncRows(fixes) }), 'gpx')
    expect(file.contentType).toBe('application/gpx+xml')
    const text = await textOf(file.body)
    expect(text.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n')).toBe(true)
    const gpx = parseXml(text)
    expect(gpx.name).toBe('gpx')
    expect(gpx.attributes).toMatchObject({ version: '1.1', xmlns: 'http://www.topografix.com/GPX/1/1' })
    const tracks = childrenNamed(gpx, 'trk')
    expect(tracks.map((track) => childNamed(track, 'name').text)).toEqual(['Van <1> & "co"', 'Truck'])
    expect(tracks.map((track) => childNamed(track, 'src').text)).toEqual(['dev-1', 'dev-2'])
    const points = tracks.map((track) =>
      childrenNamed(childNamed(track, 'trkseg'), 'trkpt').map((point) => ({
        lat: point.attributes.lat,
        lon: point.attributes.lon,
        children: point.children.map((child) => [child.name, child.text]),
      })),
    )
    expect(points).toEqual([
      [
        { lat: '53.349805', lon: '-6.26031', children: [['ele', '12.5'], ['time', '2026-10-25T00:30:00Z'], ['sat', '9']] },
        { lat: '53.35', lon: '-6.25', children: [['time', '2026-10-25T01:30:05Z']] },
      ],
      [{ lat: '-33.8688', lon: '151.2093', children: [['ele', '3'], ['time', '2026-11-02T07:15:00Z'], ['sat', '5']] }],
    ])
  })

  test('KML: one Placemark per device, a LineString of lon,lat[,alt] (a Point for a single fix), names escaped', async () => {
    const file = renderReport(document({ kind: 'route', columns: routeColumns, rows: fixes }), 'kml')
    expect(file.contentType).toBe('application/vnd.google-earth.kml+xml')
    const kml = parseXml(await textOf(file.body))
    expect(kml.name).toBe('kml')
    expect(kml.attributes.xmlns).toBe('http://www.opengis.net/kml/2.2')
    const placemarks = childrenNamed(childNamed(kml, 'Document'), 'Placemark')
    expect(placemarks.map((placemark) => [childNamed(placemark, 'name').text, childNamed(placemark, 'description').text])).toEqual([
      ['Van <1> & "co"', 'dev-1'],
      ['Truck', 'dev-2'],
    ])
    const line = childNamed(placemarks[0], 'LineString')
    expect(childNamed(line, 'coordinates').text.trim().split(/\s+/)).toEqual(['-6.26031,53.349805,12.5', '-6.25,53.35'])
    const point = childNamed(placemarks[1], 'Point')
    expect(childNamed(point, 'coordinates').text).toBe('151.2093,-33.8688,3')
  })

  test('an empty route is a valid file without tracks', async () => {
    const empty = document({ kind: 'route', columns: routeColumns, rows: [] })
    expect(childrenNamed(parseXml(await textOf(renderReport(empty, 'gpx').body)), 'trk')).toEqual([])
    expect(childrenNamed(childNamed(parseXml(await textOf(renderReport(empty, 'kml').body)), 'Document'), 'Placemark')).toEqual([])
  })
})
