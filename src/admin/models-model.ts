/**
 * Device models over the API: the import format's model (docs/import-format.md), its commands
 * checked by the import's own schema (dataset/model.ts), with ids chosen by the server.
 */
import { t } from 'elysia'
import { MAX_SEND_TEXT_LENGTH, ModelCommandSchema } from '../dataset/model'
import { Command } from '../commands/model'
import { pageFields, Uuid } from '../http/model'
import { PROTOCOLS } from '../ingest/protocols'

export const MAX_MODEL_NAME_LENGTH = 100
export const MAX_MODEL_COMMANDS = 100

/**
 * The import's command with its `id` optional: the server chooses one for a new command; an id
 * given keeps a command of this model (PATCH), or names a new command (as an import would).
 */
export const ModelCommandInput = t.Object(
  {
    ...ModelCommandSchema.properties,
    id: t.Optional({ ...Uuid, description: "Keep one of this model's commands by its id; left out, the server chooses one" }),
    // the import's, without its `must` (a message hint of the import's, not OpenAPI)
    send: t.Optional(
      t.Object(
        { text: t.String({ minLength: 1, maxLength: MAX_SEND_TEXT_LENGTH, examples: ['APN,{apn},,{password}#'] }) },
        { additionalProperties: false, description: ModelCommandSchema.properties.send.description },
      ),
    ),
  },
  { additionalProperties: false },
)

const commandsField = (description: string) => t.Array(ModelCommandInput, { maxItems: MAX_MODEL_COMMANDS, description })
const nameField = t.String({ minLength: 1, maxLength: MAX_MODEL_NAME_LENGTH, description: '1 to 100 characters', examples: ['GT06N'] })
/** the protocols this server speaks: what a model's `protocol` may name (the console's model editor offers them) */
export const SUPPORTED_PROTOCOLS: readonly string[] = PROTOCOLS.map((protocol) => protocol.name)

// not t.UnionEnum: OpenAPI gets the list as an enum either way, and a body without a protocol must not get the first as its default
const protocolField = t.Union([...SUPPORTED_PROTOCOLS.map((name) => t.Literal(name)), t.Null()], {
  description:
    `One of the protocols this server speaks (${SUPPORTED_PROTOCOLS.join(', ')}), else 400: it says how commands are sent (a device is recognised by its identifiers on any protocol); null for none`,
  examples: ['gt06'],
})

export const CreateModelBody = t.Object(
  {
    name: nameField,
    protocol: t.Optional(protocolField),
    commands: t.Optional(commandsField('The commands devices of this model offer (GET /devices/{id}/commands), in this order; default none')),
  },
  { additionalProperties: false },
)

export const UpdateModelBody = t.Object(
  {
    name: t.Optional(nameField),
    protocol: t.Optional(protocolField),
    commands: t.Optional(
      commandsField('Replaces the commands: one with the id of a command of this model keeps that id; commands not named are removed'),
    ),
  },
  { additionalProperties: false },
)

/** A command as the catalogue shows it: as GET /devices/{id}/commands does, plus how it is sent. */
export const ModelCommand = t.Object({
  ...Command.properties,
  send: t.Optional(t.Object({ text: t.String({ examples: ['RELAY,1#'] }) }, { description: 'Present when the command can be sent: the text the device receives, `{field}` standing for a form field' })),
})

export const Model = t.Object(
  {
    id: Uuid,
    name: t.String(),
    protocol: t.Union([t.String(), t.Null()]),
    commands: t.Array(ModelCommand),
    account: t.Union([Uuid, t.Null()], {
      description:
        "The account the model belongs to (made through the API: only that account's devices may use it, only its admins change it); " +
        'null for a server-wide model (the built-in catalogue, an import, the operator\'s): every user reads it, only the operator changes it',
    }),
  },
  { additionalProperties: false },
)

export const ModelListQuery = t.Object(
  {
    ...pageFields('models'),
  },
  { additionalProperties: true },
)

export type CreateModelInput = typeof CreateModelBody.static
export type UpdateModelInput = typeof UpdateModelBody.static
export type ModelInputCommand = typeof ModelCommandInput.static
export type ModelBody = typeof Model.static
