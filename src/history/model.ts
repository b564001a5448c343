import { t } from 'elysia'
import { DEFAULT_GAP_THRESHOLD_SECONDS, DEFAULT_STOP_THRESHOLD_SECONDS } from '../track'

/** The longest window one history request may cover. */
export const MAX_RANGE_SECONDS = 31 * 86_400

/** The shortest `gap_threshold_time`: below a minute a 1 Hz tracker's every hiccup would end a travel. */
export const MIN_GAP_THRESHOLD_SECONDS = 60

/** 9999-12-31T23:59:59Z: beyond it a value is a mistake, and SQLite could not bind it as an integer */
const LATEST = 253_402_300_799

const timestamp = (name: 'from' | 'to', description: string) => t.Integer({ title: name, minimum: 0, maximum: LATEST, description, examples: [1764000000] })

export const RangeQuery = t.Object(
  {
    from: timestamp('from', 'Start, Unix seconds (inclusive)'),
    to: timestamp('to', 'End, Unix seconds (inclusive); from ≤ to, at most 31 days after from'),
  },
  { additionalProperties: true },
)

export const RouteQuery = t.Object(
  {
    from: RangeQuery.properties.from,
    to: RangeQuery.properties.to,
    stop_threshold_time: t.Integer({
      title: 'stop_threshold_time',
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      default: DEFAULT_STOP_THRESHOLD_SECONDS,
      description: 'Minimum stop duration in seconds (default 300)',
    }),
    gap_threshold_time: t.Integer({
      title: 'gap_threshold_time',
      minimum: MIN_GAP_THRESHOLD_SECONDS,
      maximum: Number.MAX_SAFE_INTEGER,
      default: DEFAULT_GAP_THRESHOLD_SECONDS,
      description:
        `No-data threshold in seconds (default ${DEFAULT_GAP_THRESHOLD_SECONDS}, at least ${MIN_GAP_THRESHOLD_SECONDS}): a silence longer than this after which the device ` +
        'reports from farther than the stop radius (30 m) is a gap, which ends the travel before it and counts neither as driving time nor as distance; ' +
        'within the radius it is part of a stop',
    }),
  },
  { additionalProperties: true },
)

const Coordinate = { latitude: t.Number(), longitude: t.Number() }

export const RoutePoint = t.Object({ ...Coordinate, speed: t.Number({ description: 'km/h' }), timestamp: t.Integer() })

export const Stop = t.Object({
  ...Coordinate,
  duration: t.Number({ description: 'seconds: end - start' }),
  start: t.Integer(),
  end: t.Integer(),
})

export const Gap = t.Object({
  start: t.Integer({ description: 'timestamp of the last fix before the silence' }),
  end: t.Integer({ description: 'timestamp of the first fix after it' }),
  duration: t.Number({ description: 'seconds: end - start' }),
  displacement: t.Number({ description: 'metres in a straight line from the fix before to the fix after; counted in no distance' }),
})

export const RouteResult = t.Object({
  points: t.Array(RoutePoint, { description: 'Every stored fix in the window, in time order' }),
  stops: t.Array(Stop),
  total_distance: t.Number({ description: 'metres of movement (no jitter inside stops, nothing across a gap); equals the travels\' total_distance' }),
  total_duration: t.Number({ description: 'seconds: last point timestamp - first' }),
  gaps: t.Optional(
    t.Array(Gap, {
      description:
        'Present only when the window has one: spans without data (longer than `gap_threshold_time`) after which the device was farther than the stop radius from where it went quiet. ' +
        'No travel spans one, and the points either side of it are not joined: nothing is known of the way between them',
    }),
  ),
})

export const Place = t.Object({ ...Coordinate, timestamp: t.Integer(), address: t.String({ examples: ['Montreuil, FR'] }) })

export const Travel = t.Object({
  start: Place,
  end: Place,
  distance: t.Number({ description: 'metres' }),
  duration: t.Number({ description: 'seconds: end.timestamp - start.timestamp' }),
  max_speed: t.Number({ description: 'km/h' }),
  avg_speed: t.Number({ description: 'km/h: distance / duration' }),
})

export const TravelResult = t.Object({
  travels: t.Array(Travel),
  total_travels: t.Integer(),
  total_distance: t.Number({ description: 'metres' }),
  total_duration: t.Number({ description: 'seconds: the sum of the travels\' durations' }),
})

export const EventRecord = t.Object({
  alarm_code: t.String({ examples: ['sos', 'power_cut', 'overspeed'] }),
  context: t.Record(t.String(), t.Unknown()),
  speed: t.Union([t.Integer({ description: 'km/h' }), t.Null()]),
  satellite: t.Union([t.Integer(), t.Null()]),
  coordinates: t.Union([t.Tuple([t.Number(), t.Number()]), t.Null()], { description: '[latitude, longitude]' }),
  mcc: t.Union([t.Integer(), t.Null()]),
  mnc: t.Union([t.Integer(), t.Null()]),
  dbm: t.Union([t.Integer(), t.Null()]),
  timestamp: t.Integer(),
})

export type RoutePointBody = typeof RoutePoint.static
export type StopBody = typeof Stop.static
export type GapBody = typeof Gap.static
export type RouteBody = typeof RouteResult.static
export type TravelBody = typeof TravelResult.static
export type EventBody = typeof EventRecord.static
