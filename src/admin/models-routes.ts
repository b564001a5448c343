import { Elysia, t } from 'elysia'
import { asUser, type authPlugin } from '../http/auth'
import { IdParams, responses } from '../http/model'
import { loggedRequestId } from '../ops/requests'
import type { ModelActor, ModelAdmin } from './models'
import { CreateModelBody, Model, ModelListQuery, UpdateModelBody } from './models-model'

export interface ModelRouteDeps {
  /** its writes wait for another process's write lock asynchronously (the store's, store/busy.ts) */
  models: ModelAdmin
}

const CATALOGUE =
  'A model belongs to an account or to the whole server (`account`). One made with POST /models is your account\'s: only its devices ' +
  'may use it, only its admins see and change it (another account\'s admin gets 404, as for an unknown model). A server-wide model ' +
  '(`account: null`: the built-in catalogue, one per protocol with its standard commands; imported models; the operator\'s) is read by ' +
  'every user and changed only by the operator, with `tracker model` on the server or an import: PATCH and DELETE give 403. ' +
  'So no account can change what another account\'s devices are sent. A change to a model is in the audit log (GET /audit) of every ' +
  'account whose devices use it and of yours, with your user id and the request id.'

const COMMANDS =
  'Commands are the import format\'s (docs/import-format.md): `name` and a `widget` object with a `type` (`button`, `form` or your own) and ' +
  'any other fields, kept as written. Their `id` is optional: the server chooses one; an id of one of this model\'s commands keeps that ' +
  'command; a repeated id is 400; an id of another model\'s command is 409. An optional `send: { text }` makes a command sendable ' +
  '(POST /devices/{id}/commands/{commandId}): `text` goes to the device, each `{field}` replaced by that form field\'s value; a command ' +
  'given without `send` has none. A form field may declare a `pattern`, a regular expression (JavaScript, `u` flag, at most 200 ' +
  'characters) that the whole value must match; it is also the only way a value may hold the separators of the device\'s protocol. A ' +
  'pattern that is not a regular expression, or that could make matching slow (a repetition inside a repetition, overlapping ' +
  'alternatives), is 400 naming it; a model declares at most 16 different patterns.'

/** The device models: /models. */
export function modelRoutes(auth: ReturnType<typeof authPlugin>, { models }: ModelRouteDeps) {
  const adminOf = (principal: Parameters<typeof asUser>[0], headers: Record<string, unknown>): ModelActor => {
    const user = asUser(principal)
    return { kind: 'admin', accountId: user.accountId, userId: user.userId, requestId: loggedRequestId({ headers }) }
  }
  return new Elysia({ name: 'models', prefix: '/models' })
    .use(auth)
    .get('', ({ principal, query }) => models.listModels(asUser(principal).accountId, { limit: query.limit, offset: query.offset }), {
      auth: 'user',
      query: ModelListQuery,
      detail: {
        tags: ['Models'],
        summary: 'List the device models',
        description: `The server-wide models and your account's, ordered by name, then id; 200 with [] past the end. Any user (members too); a share token gets 403. ${CATALOGUE}`,
        responses: responses({ 200: { schema: t.Array(Model), description: 'The models' } }, 400, 401, 403, 429, 504),
      },
    })
    .get('/:id', ({ principal, params }) => models.getModel(params.id, asUser(principal).accountId), {
      auth: 'user',
      params: IdParams,
      detail: {
        tags: ['Models'],
        summary: 'One device model',
        description: `Any user (members too); a share token gets 403; another account's model is 404. ${CATALOGUE}`,
        responses: responses({ 200: { schema: Model, description: 'The model' } }, 400, 401, 403, 404, 429, 504),
      },
    })
    .post(
      '',
      async ({ principal, body, set }) => {
        const created = await models.createModel(body, adminOf(principal, set.headers))
        set.status = 201
        set.headers.location = `/models/${created.id}`
        return created
      },
      {
        auth: 'admin',
        body: CreateModelBody,
        detail: {
          tags: ['Models'],
          summary: 'Add a device model',
          description: `201 with the model and \`Location: /models/{id}\`; the server chooses its id. It belongs to your account. ${COMMANDS} ${CATALOGUE}`,
          responses: responses({ 201: { schema: Model, description: 'The new model' } }, 400, 401, 403, 409, 429, 504),
        },
      },
    )
    .patch(
      '/:id',
      ({ principal, params, body, set }) => models.updateModel(params.id, body, adminOf(principal, set.headers)),
      {
        auth: 'admin',
        params: IdParams,
        body: UpdateModelBody,
        detail: {
          tags: ['Models'],
          summary: 'Change a device model',
          description: `Only the fields sent change; \`commands\` replaces the list (commands not named are removed). Your account's models only: a server-wide one is 403, another account's 404. ${COMMANDS} ${CATALOGUE}`,
          responses: responses({ 200: { schema: Model, description: 'The model' } }, 400, 401, 403, 404, 409, 429, 504),
        },
      },
    )
    .delete(
      '/:id',
      async ({ principal, params, set }) => {
        await models.deleteModel(params.id, adminOf(principal, set.headers))
        set.status = 204
        return null
      },
      {
        auth: 'admin',
        params: IdParams,
        detail: {
          tags: ['Models'],
          summary: 'Delete a device model',
          description: `With its commands. Your account's models only: a server-wide one is 403, another account's 404; 409 while a device still uses it. ${CATALOGUE}`,
          responses: responses({ 204: { description: 'Deleted' } }, 400, 401, 403, 404, 409, 429, 504),
        },
      },
    )
}
