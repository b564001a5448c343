/** Schemas of sign-in and first-run setup, for validation and OpenAPI. */
import { t } from 'elysia'
import { Uuid } from '../http/model'
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './passwords'

const closed = { additionalProperties: false } as const

export const SignInBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200, description: 'The sign-in name (compared case-insensitively)', examples: ['dana'] }),
    password: t.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH, examples: ['correct horse battery'] }),
  },
  closed,
)

export const SessionUser = t.Object(
  {
    id: Uuid,
    name: t.String({ examples: ['dana'] }),
    role: t.Union([t.Literal('admin'), t.Literal('member')]),
    account: t.Object({ id: Uuid, name: t.String({ examples: ['Acme Logistics'] }) }),
  },
  { description: 'Who is signed in' },
)

export const SessionAnswer = t.Object({ user: SessionUser })

export const SetupBody = t.Object(
  {
    token: t.String({ maxLength: 128, description: "The setup link's token (the server's log at start)" }),
    account: t.String({ maxLength: 1024, description: 'The account name: 1 to 200 characters (trimmed)', examples: ['Acme Logistics'] }),
    name: t.String({ maxLength: 1024, description: "The admin's sign-in name: 1 to 100 characters, no control characters, no space at either end", examples: ['dana'] }),
    password: t.String({ maxLength: MAX_PASSWORD_LENGTH, description: 'At least 10 characters', examples: ['correct horse battery'] }),
  },
  closed,
)

export const ChangePasswordBody = t.Object(
  {
    current_password: t.Optional(t.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH, description: 'The password you have now (with `password`)', examples: ['correct horse battery'] })),
    password: t.Optional(
      t.String({
        minLength: MIN_PASSWORD_LENGTH,
        maxLength: MAX_PASSWORD_LENGTH,
        description: `The new one: ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters, stored as an argon2id hash (with \`current_password\`)`,
        examples: ['a brand new passphrase'],
      }),
    ),
    timezone: t.Optional(
      t.Union([t.String({ maxLength: 200 }), t.Null()], {
        description: 'Your IANA time zone (e.g. `Europe/Dublin`): the default `tz` of your reports; null clears it (reports then default to UTC)',
        examples: ['Europe/Dublin'],
      }),
    ),
  },
  closed,
)
