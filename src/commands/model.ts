import { t } from 'elysia'
import { Uuid } from '../http/model'

const ButtonWidget = t.Object({
  type: t.Literal('button'),
  label: t.String(),
  confirm: t.Boolean(),
  confirm_message: t.Optional(t.String({ description: 'present only on some buttons' })),
})

const FormWidget = t.Object({
  type: t.Literal('form'),
  fields: t.Array(t.Object({ name: t.String(), type: t.String({ examples: ['text', 'password'] }), label: t.String() })),
})

export const Command = t.Object({
  id: Uuid,
  name: t.String(),
  widget: t.Union([ButtonWidget, FormWidget, t.Record(t.String(), t.Unknown())], {
    description: 'UI widget configuration, exactly as stored for the model: `button` or `form` (other types are passed through)',
  }),
})

export type CommandBody = typeof Command.static
