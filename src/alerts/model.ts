/**
 * Geofences over the API: `{ id, name, area, groups, speed_limit, created_at }`. The schemas
 * check the shape (and document it); the geometry itself is checked by track/geofence.ts's
 * checkArea, which names what is wrong (`/area/coordinates/0`: "is self-intersecting: …").
 */
import { t } from 'elysia'
import { DateTime, pageFields, Uuid } from '../http/model'
import { MAX_CIRCLE_RADIUS_M, MAX_POLYGON_POINTS, MIN_CIRCLE_RADIUS_M } from '../track/geofence'

export const MAX_GEOFENCE_NAME_LENGTH = 100
export const MAX_GEOFENCE_GROUPS = 1000
/** km/h: no road vehicle goes faster; a larger limit is a typo */
export const MAX_SPEED_LIMIT_KMH = 1000

const Position = t.Array(t.Number(), { minItems: 2, maxItems: 3, description: '[longitude, latitude] (GeoJSON order; a third number, altitude, is ignored)' })

export const PolygonArea = t.Object(
  {
    type: t.Literal('Polygon'),
    // no maxItems: the limit is the server's MAX_GEOFENCE_VERTICES, and a geofence stored under a higher one is kept as it is
    coordinates: t.Array(t.Array(Position), {
      minItems: 1,
      description:
        `GeoJSON rings: the outer ring first, then any holes; each closed (its last point repeats its first), at most ` +
        `${MAX_POLYGON_POINTS.toLocaleString('en')} points in all (the server's MAX_GEOFENCE_VERTICES; a new or changed area with more is 400 ` +
        'at `/area/coordinates`), not self-intersecting. An edge whose longitudes differ by more than 180° crosses the antimeridian (the short way round).',
    }),
  },
  {
    additionalProperties: false,
    description: 'A GeoJSON Polygon',
    examples: [{ type: 'Polygon', coordinates: [[[2.29, 48.85], [2.3, 48.85], [2.3, 48.86], [2.29, 48.86], [2.29, 48.85]]] }],
  },
)

export const CircleArea = t.Object(
  {
    type: t.Literal('Circle'),
    center: t.Array(t.Number(), { minItems: 2, maxItems: 2, description: '[latitude, longitude] (not GeoJSON order)' }),
    radius: t.Number({ description: `Metres, ${MIN_CIRCLE_RADIUS_M} to ${MAX_CIRCLE_RADIUS_M.toLocaleString('en')}` }),
  },
  { additionalProperties: false, description: 'A circle', examples: [{ type: 'Circle', center: [48.8584, 2.2945], radius: 250 }] },
)

export const Area = t.Union([PolygonArea, CircleArea], { description: 'A GeoJSON Polygon or a Circle' })

const nameField = t.String({ minLength: 1, maxLength: MAX_GEOFENCE_NAME_LENGTH, description: '1 to 100 characters', examples: ['Depot'] })
const groupsField = t.Array(Uuid, {
  maxItems: MAX_GEOFENCE_GROUPS,
  description: "The geofence applies to the devices of these groups of your account; empty or absent: to every device of the account",
})
const speedLimitField = t.Union([t.Number({ exclusiveMinimum: 0, maximum: MAX_SPEED_LIMIT_KMH }), t.Null()], {
  description: 'km/h: a valid fix inside faster than this is an `overspeed` event; null: none of its own',
  examples: [30],
})

/**
 * The body's `area` is taken as any object here and checked by checkArea, whose messages name
 * the ring and point at fault; a union schema would answer only "expected a union".
 */
const areaInput = t.Object({ type: t.String({ description: '"Polygon" or "Circle"' }) }, {
  additionalProperties: true,
  description: `A GeoJSON Polygon (\`{ "type": "Polygon", "coordinates": [[[lon, lat], …]] }\`) or a Circle (\`{ "type": "Circle", "center": [lat, lon], "radius": metres }\`, radius ${MIN_CIRCLE_RADIUS_M} to ${MAX_CIRCLE_RADIUS_M.toLocaleString('en')})`,
  examples: [{ type: 'Circle', center: [48.8584, 2.2945], radius: 250 }],
})

export const CreateGeofenceBody = t.Object(
  {
    name: nameField,
    area: areaInput,
    groups: t.Optional(groupsField),
    speed_limit: t.Optional(speedLimitField),
  },
  { additionalProperties: false },
)

export const UpdateGeofenceBody = t.Object(
  {
    name: t.Optional(nameField),
    area: t.Optional(areaInput),
    groups: t.Optional(groupsField),
    speed_limit: t.Optional(speedLimitField),
  },
  { additionalProperties: false },
)

export const Geofence = t.Object(
  {
    id: Uuid,
    name: t.String(),
    area: Area,
    groups: t.Array(Uuid),
    speed_limit: t.Union([t.Number(), t.Null()]),
    created_at: DateTime,
  },
  { additionalProperties: false },
)

export const GeofenceListQuery = t.Object(
  {
    ...pageFields('geofences'),
  },
  { additionalProperties: true },
)

export type CreateGeofenceInput = typeof CreateGeofenceBody.static
export type UpdateGeofenceInput = typeof UpdateGeofenceBody.static
export type GeofenceBody = typeof Geofence.static
