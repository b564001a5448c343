/** Administration request and response schemas (users, groups, keys, /me, /audit): validation and OpenAPI from one source. */
import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { DateTime, pageFields, Uuid } from '../http/model'
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../session/passwords'

export const ROLES = ['admin', 'member'] as const
export const MAX_NAME_LENGTH = 100
/** ids a group or a user's groups may list in one request */
export const MAX_MEMBERS = 10_000

const NAME_RULE = `1 to ${MAX_NAME_LENGTH} characters, no control characters, not beginning or ending with a space`
const name = (description: string) => t.String({ minLength: 1, maxLength: MAX_NAME_LENGTH, description: `${description}: ${NAME_RULE}` })
const ids = (description: string) => t.Array(Uuid, { maxItems: MAX_MEMBERS, description })
// not t.UnionEnum: Elysia gives it a default (its first value), which an optional field would take when left out
const role = (description: string) => t.Union([t.Literal('admin'), t.Literal('member')], { description })
const password = t.String({
  minLength: MIN_PASSWORD_LENGTH,
  maxLength: MAX_PASSWORD_LENGTH,
  description: `Write-only: ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters, stored as an argon2id hash. Setting it ends the user's console sessions`,
  examples: ['correct horse battery staple'],
})

export const PageQuery = t.Object(
  {
    ...pageFields('items'),
  },
  { additionalProperties: true },
)

// ---- users

export const User = t.Object(
  {
    id: Uuid,
    name: t.String({ description: 'The sign-in name: unique across the server, compared case-insensitively' }),
    role: role('`admin` reaches every device of the account and manages it; `member` the devices of their groups'),
    groups: t.Array(Uuid, { description: "The user's groups, by group name then id" }),
    created_at: DateTime,
  },
  { additionalProperties: false },
)

export const CreateUserBody = t.Object(
  {
    name: name('Sign-in name, unique across the server in any case (else 409)'),
    role: t.Optional(role('Default `member`')),
    groups: t.Optional(ids('Groups of your account (another account\'s or an unknown group is 404); default none')),
    password: t.Optional(password),
  },
  { additionalProperties: false },
)

export const UpdateUserBody = t.Object(
  {
    name: t.Optional(name('New sign-in name, unique across the server in any case (else 409)')),
    role: t.Optional(role("Demoting the account's last admin is 409")),
    groups: t.Optional(ids("Replaces the user's groups")),
    password: t.Optional(password),
  },
  { additionalProperties: false },
)

// ---- groups

export const Group = t.Object(
  {
    id: Uuid,
    name: t.String(),
    devices: t.Array(Uuid, { description: 'Devices of the group, by alias then id' }),
    users: t.Array(Uuid, { description: 'Users of the group, by name then id' }),
  },
  { additionalProperties: false },
)

export const CreateGroupBody = t.Object(
  {
    name: name('Group name (need not be unique)'),
    devices: t.Optional(ids('Devices of your account; default none')),
    users: t.Optional(ids('Users of your account; default none')),
  },
  { additionalProperties: false },
)

export const UpdateGroupBody = t.Object(
  {
    name: t.Optional(name('Group name')),
    devices: t.Optional(ids('Replaces the devices')),
    users: t.Optional(ids('Replaces the users')),
  },
  { additionalProperties: false },
)

// ---- keys

export const KeyParams = t.Object({ id: Uuid, keyId: Uuid })

const keyFields = {
  id: Uuid,
  name: t.String(),
  created_at: DateTime,
  last_used_at: t.Union([DateTime, t.Null()], { description: 'The first use of the minute it was last used in (written at most once a minute); null when never used' }),
  expires_at: t.Union([DateTime, t.Null()], { description: 'null: never expires' }),
}

export const ApiKey = t.Object(keyFields, { additionalProperties: false })

export const ApiKeyCreated = t.Object(
  { ...keyFields, key: t.String({ description: 'The secret, shown this once (only its SHA-256 is kept): send it as `Authorization: Bearer <key>`' }) },
  { additionalProperties: false },
)

export const CreateKeyBody = t.Object(
  {
    name: name('A label: what or who uses the key'),
    // TypeBox's Integer, not Elysia's: that one also accepts a numeric string
    expires_at: t.Optional(
      t.Union([DateTime, Type.Integer({ minimum: 0, description: 'Unix seconds' })], {
        description: 'When the key stops working: an ISO 8601 datetime or Unix seconds, in the future. Default: never',
      }),
    ),
  },
  { additionalProperties: false },
)

// ---- /me and /audit

export const Me = t.Union(
  [
    t.Object(
      {
        kind: t.Literal('user'),
        id: Uuid,
        name: t.String(),
        role: role('Your role'),
        account: t.Object({ id: Uuid, name: t.String() }),
        timezone: t.Union([t.String(), t.Null()], { description: 'Your IANA time zone (PATCH /me), the default `tz` of your reports; null: none set (UTC)' }),
      },
      { additionalProperties: false },
    ),
    t.Object(
      {
        kind: t.Literal('share'),
        devices: t.Array(Uuid, { description: "The link's devices you can read, in the order of GET /devices" }),
        expires_at: DateTime,
        acl: t.Array(Uuid, { description: 'The permission ids the link grants' }),
      },
      { additionalProperties: false },
    ),
  ],
  { description: 'An API key or session: the user. A share token: the link.' },
)

export const AuditQuery = t.Object(
  {
    from: t.Optional(t.Integer({ title: 'from', minimum: 0, maximum: 253_402_300_799, description: 'Unix seconds, inclusive' })),
    to: t.Optional(t.Integer({ title: 'to', minimum: 0, maximum: 253_402_300_799, description: 'Unix seconds, inclusive' })),
    ...PageQuery.properties,
  },
  { additionalProperties: true },
)

export const AuditEntry = t.Object(
  {
    id: t.Integer(),
    actor: t.String({ description: 'The user id who made the change, or `cli` for the operator\'s command line' }),
    action: t.String({ examples: ['create'], description: '`create`, `update`, `delete`, `password`, `setup`' }),
    object_type: t.String({ examples: ['user'], description: '`account`, `device`, `group`, `user`, `key`, `model`, `session`, `geofence`, `notification`, `email_alerts` (a user’s own email alerts; the object is the user)' }),
    object_id: t.String(),
    at: DateTime,
    request_id: t.Union([t.String(), t.Null()], { description: "The change's X-Request-Id; null from the command line" }),
  },
  { additionalProperties: false },
)

export type Role = (typeof ROLES)[number]
export type CreateUserInput = typeof CreateUserBody.static
export type UpdateUserInput = typeof UpdateUserBody.static
export type CreateGroupInput = typeof CreateGroupBody.static
export type UpdateGroupInput = typeof UpdateGroupBody.static
export type CreateKeyInput = typeof CreateKeyBody.static
export type UserBody = typeof User.static
export type GroupBody = typeof Group.static
export type ApiKeyBody = typeof ApiKey.static
export type ApiKeyCreatedBody = typeof ApiKeyCreated.static
export type MeBody = typeof Me.static
