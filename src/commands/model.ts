import { t } from 'elysia'
import { DateTime, pageFields, Uuid } from '../http/model'

const ButtonWidget = t.Object({
  type: t.Literal('button'),
  label: t.String(),
  confirm: t.Boolean(),
  confirm_message: t.Optional(t.String({ description: 'present only on some buttons' })),
})

const FormWidget = t.Object({
  type: t.Literal('form'),
  fields: t.Array(
    t.Object({
      name: t.String(),
      type: t.String({ examples: ['text', 'password', 'number'] }),
      label: t.String(),
      pattern: t.Optional(
        t.String({
          description:
            'A regular expression (JavaScript, `u` flag) the whole value must match, as HTML\'s `pattern`; the only way a value may hold the separators of the device\'s protocol',
          examples: ['[1-9][0-9]{0,4}'],
        }),
      ),
    }),
  ),
})

export const Command = t.Object({
  id: Uuid,
  name: t.String(),
  widget: t.Union([ButtonWidget, FormWidget, t.Record(t.String(), t.Unknown())], {
    description: 'UI widget configuration, exactly as stored for the model: `button` or `form` (other types are passed through)',
  }),
})

export type CommandBody = typeof Command.static

export const SENT_STATUSES = ['queued', 'sent', 'answered', 'expired', 'cancelled', 'failed'] as const
export type SentStatus = (typeof SENT_STATUSES)[number]

export const SentCommand = t.Object(
  {
    id: { ...Uuid, description: 'The sent command' },
    command: { ...Uuid, description: "The model's command it was made from" },
    name: t.String({ description: "The command's name when it was sent", examples: ['Engine stop'] }),
    text: t.String({ description: 'The text the device is sent, every `password` field\'s value shown as `***`', examples: ['APN,internet,,***#'] }),
    status: t.UnionEnum(SENT_STATUSES, {
      description: '`queued` → `sent` → `answered`; or `expired` (not sent within COMMAND_TTL), `cancelled`, `failed` (no answer after a re-send)',
    }),
    created_at: DateTime,
    sent_at: t.Union([DateTime, t.Null()], { description: 'When it last went out to the device (a re-send moves it); null while queued' }),
    answered_at: t.Union([DateTime, t.Null()]),
    expires_at: { ...DateTime, description: 'A command still queued then expires (created_at + COMMAND_TTL)' },
    response: t.Union([t.String(), t.Null()], { description: "The device's answer text (password values as `***`), null until answered" }),
    user: t.Union([Uuid, t.Null()], { description: 'The id of the user who sent it' }),
  },
  { additionalProperties: false },
)

export type SentCommandBody = typeof SentCommand.static

export const SendParams = t.Object({ id: Uuid, commandId: Uuid })
export const SentParams = t.Object({ id: Uuid, sentId: Uuid })

export const SentListQuery = t.Object(
  {
    ...pageFields('sent commands'),
  },
  { additionalProperties: true },
)

export const SendBody = t.Object({}, {
  additionalProperties: t.Union([t.String({ maxLength: 128 }), t.Number()]),
  description:
    "The form's values by field name (`{}` for a button): every field, no other; a string of at most 128 characters without control characters, a `number` field a number",
  examples: [{ apn: 'internet', password: 'secret' }],
})
