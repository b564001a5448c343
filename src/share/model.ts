/** Share link request and response schemas: validation and OpenAPI from one source. */
import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { DateTime, Uuid } from '../http/model'
import { PERMISSION } from './permissions'

export const MIN_TTL = 60
export const MAX_TTL = 31_536_000
export const MAX_DEVICES = 1000

const ACL_HELP =
  `Permission ids: ${PERMISSION.location} (location: device list, detail and live stream), ` +
  `${PERMISSION.history} (history: route and travels), ${PERMISSION.events} (events).`

const deviceIds = (description: string) => t.Array(Uuid, { minItems: 1, maxItems: MAX_DEVICES, description })
// TypeBox's Integer, not Elysia's: that one also accepts a numeric string, and a JSON ttl of "60" is a client bug
const ttl = (description: string) => Type.Integer({ minimum: MIN_TTL, maximum: MAX_TTL, description, examples: [86400] })
const acl = (description: string) =>
  t.Array(Uuid, { minItems: 1, maxItems: 3, description: `${description} ${ACL_HELP}`, examples: [[PERMISSION.location, PERMISSION.history]] })

export const CreateShareBody = t.Object(
  {
    devices: deviceIds(`1 to ${MAX_DEVICES} distinct device ids, each one you can reach (else 404); a repeated id is 400`),
    ttl: ttl('Lifetime in seconds, 60 to 31,536,000 (one year); expires_at = now + ttl'),
    acl: t.Optional(acl('Distinct permission ids the link grants; default: all three.')),
  },
  { additionalProperties: false },
)

export const UpdateShareBody = t.Object(
  {
    devices: t.Optional(deviceIds(`Replaces the shared devices: 1 to ${MAX_DEVICES} distinct ids, each one you can reach`)),
    ttl: t.Optional(ttl('Recomputes expires_at = now + ttl (60 to 31,536,000 seconds)')),
    acl: t.Optional(acl('Replaces the permissions.')),
  },
  { additionalProperties: false },
)

export type CreateShareInput = typeof CreateShareBody.static
export type UpdateShareInput = typeof UpdateShareBody.static

const linkFields = {
  id: Uuid,
  account: Uuid,
  devices: t.Array(Uuid),
  acl: t.Array(Uuid, { description: ACL_HELP }),
  revoked: t.Boolean(),
  expires_at: DateTime,
  unique_views: t.Integer({ minimum: 0 }),
  last_accessed_at: t.Union([DateTime, t.Null()], { description: 'null until the link is first used' }),
  created_at: DateTime,
}

/** The update shape of the spec. */
export const ShareLink = t.Object(linkFields, { additionalProperties: false })

/** The list shape of the spec: the update shape with the token and its URL. */
export const ShareLinkListed = t.Object(
  {
    ...linkFields,
    token: t.String({ description: 'The share token (a Bearer credential)' }),
    original_url: t.String({ description: '{APP_URL}/share?token=<token>: the web page' }),
  },
  { additionalProperties: false },
)

/** GET /devices/share/{id}: the list shape plus the short URL, which is otherwise only shown at creation. */
export const ShareLinkDetail = t.Object(
  { ...ShareLinkListed.properties, short_url: t.String({ description: '{SHORT_URL_BASE}/<code>' }) },
  { additionalProperties: false },
)

export const ShareCreated = t.Object(
  {
    id: Uuid,
    token: t.String({ description: 'Random, 256 bits, base64url' }),
    devices: t.Array(Uuid),
    expires_at: DateTime,
    original_url: t.String({ description: '{APP_URL}/share?token=<token>' }),
    short_url: t.String({ description: '{SHORT_URL_BASE}/<code>: answers 302 to original_url while the link is active' }),
  },
  { additionalProperties: false },
)

export type ShareLinkBody = typeof ShareLink.static
export type ShareLinkListedBody = typeof ShareLinkListed.static
export type ShareLinkDetailBody = typeof ShareLinkDetail.static
export type ShareCreatedBody = typeof ShareCreated.static

