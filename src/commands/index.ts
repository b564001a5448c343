import { Elysia, t } from 'elysia'
import { asUser, type authPlugin } from '../http/auth'
import { IdParams, responses } from '../http/model'
import { PROTOCOLS } from '../ingest/protocols'
import { Command, SendBody, SendParams, SentCommand, SentListQuery, SentParams } from './model'
import type { CommandService } from './service'

const REACH = 'Any user who reaches the device (404 when it is out of reach); a share token gets 403 (links are read-only).'

/** each protocol's separators, as its unit declares them (protocols/<name>/command.ts) */
const SEPARATORS = PROTOCOLS.flatMap((p) => (p.transport === 'tcp' && p.commandSeparators ? [`${p.name} ${p.commandSeparators.map((c) => `\`${c}\``).join(' ')}`] : [])).join('; ')

const SEND =
  'Body: the form\'s values by field name (`{}`, or no body, for a button). Checked against the command\'s widget: every field present, ' +
  'no other, a string of at most 128 characters without control characters, a `number` field a JSON number, a field with a ' +
  '`pattern` a value the pattern matches whole; else 400 naming the field. A value may not hold the separators of the device\'s ' +
  `protocol (${SEPARATORS}): it would send more ` +
  'than its field, another parameter or another command. That is 400 naming the field too, unless the field\'s pattern allows it. ' +
  'The text sent is the command\'s `send.text` with each `{field}` replaced by its value. 404: no such command in the device\'s ' +
  'model. 409: the device has no model yet (created without one, it gets the built-in model of its protocol at its first report), the command has no `send` (it cannot be sent), or the model\'s protocol is not one that takes commands (only gt06, ' +
  'teltonika, h02, gps103 and watch do; OsmAnd and other HTTP devices cannot be called back), or a field\'s pattern was stored by an older ' +
  'version and could make matching slow (the model must be corrected). The command is stored before the 202 (it survives a ' +
  'restart) and goes to the device at once when it is connected, else when it next logs in: in order, one at a time per device (the ' +
  'next once the previous is answered or has waited 60 s); one not sent within COMMAND_TTL seconds (default 86,400) becomes ' +
  '`expired`. The answer is the sent command; `password` fields show as `***` here and everywhere after.'

export function commandsRoutes(auth: ReturnType<typeof authPlugin>, commands: CommandService) {
  return new Elysia({ name: 'commands', prefix: '/devices' })
    .use(auth)
    .get('/:id/commands', ({ principal, params }) => commands.forDevice(asUser(principal), params.id), {
      auth: 'user',
      params: IdParams,
      detail: {
        tags: ['Devices'],
        responses: responses({ 200: { schema: t.Array(Command), description: "The model's commands" } }, 400, 401, 403, 404, 429, 504),
        summary: "Commands of the device's model",
        description: 'An empty array when the model offers none, or when the device has no model yet (it gets the built-in model of its protocol at its first report). 404 when the device is out of reach; 403 with a share token (links are read-only).',
      },
    })
    .get('/:id/commands/sent', ({ principal, params, query }) => commands.sent(asUser(principal), params.id, { limit: query.limit, offset: query.offset }), {
      auth: 'user',
      params: IdParams,
      query: SentListQuery,
      detail: {
        tags: ['Devices'],
        summary: 'Commands sent to the device',
        description: `Newest first; 200 with [] past the end. ${REACH}`,
        responses: responses({ 200: { schema: t.Array(SentCommand), description: 'The sent commands' } }, 400, 401, 403, 404, 429, 504),
      },
    })
    .get('/:id/commands/sent/:sentId', ({ principal, params }) => commands.sentOne(asUser(principal), params.id, params.sentId), {
      auth: 'user',
      params: SentParams,
      detail: {
        tags: ['Devices'],
        summary: 'One command sent to the device',
        description: `404 when the device has no such sent command. ${REACH}`,
        responses: responses({ 200: { schema: SentCommand, description: 'The sent command' } }, 400, 401, 403, 404, 429, 504),
      },
    })
    .delete(
      '/:id/commands/sent/:sentId',
      async ({ principal, params, set }) => {
        await commands.cancel(asUser(principal), params.id, params.sentId)
        set.status = 204
        return null
      },
      {
        auth: 'user',
        params: SentParams,
        detail: {
          tags: ['Devices'],
          summary: 'Cancel a queued command',
          description: `204: the command was \`queued\` and is now \`cancelled\`; 409 in any other status (already sent, answered, expired, …). ${REACH}`,
          responses: responses({ 204: { description: 'Cancelled' } }, 400, 401, 403, 404, 409, 429, 504),
        },
      },
    )
    .post(
      '/:id/commands/:commandId',
      async ({ principal, params, body, set }) => {
        const sent = await commands.send(asUser(principal), params.id, params.commandId, body)
        set.status = 202
        set.headers.location = `/devices/${params.id.toLowerCase()}/commands/sent/${sent.id}`
        return sent
      },
      {
        auth: 'user',
        params: SendParams,
        detail: {
          tags: ['Devices'],
          summary: 'Send a command to the device',
          description: `${SEND} ${REACH}`,
          requestBody: { required: false, content: { 'application/json': { schema: SendBody } } },
          responses: responses({ 202: { schema: SentCommand, description: 'Stored and queued: the sent command (`Location` names it)' } }, 400, 401, 403, 404, 409, 413, 429, 504),
        },
      },
    )
}
