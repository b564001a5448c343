import { Elysia, t } from 'elysia'
import { asUser, type authPlugin } from '../http/auth'
import { IdParams, responses } from '../http/model'
import { REQUEST_ID_HEADER } from '../ops/requests'
import type { ModelAdmin } from './models'
import { CreateModelBody, Model, ModelListQuery, UpdateModelBody } from './models-model'

export interface ModelRouteDeps {
  models: ModelAdmin
  /** runs one write, waiting for another process's write lock asynchronously (store/busy.ts) */
  write<T>(work: () => T): Promise<T>
}

const CATALOGUE =
  'Models are one catalogue for the whole server, as in the import format (a model has no account): every account admin reads ' +
  'and manages it, and a change reaches the devices of every account that use the model. Members and share tokens get 403. ' +
  'Each change is in the audit log (GET /audit) of your account with your user id and the request id.'

const COMMANDS =
  'Commands are the import format\'s (docs/import-format.md): `name` and a `widget` object with a `type` (`button`, `form` or your own) and ' +
  'any other fields, kept as written. Their `id` is optional: the server chooses one; an id of one of this model\'s commands keeps that ' +
  'command; a repeated id is 400; an id of another model\'s command is 409. An optional `send: { text }` makes a command sendable ' +
  '(POST /devices/{id}/commands/{commandId}): `text` goes to the device, each `{field}` replaced by that form field\'s value; a command ' +
  'given without `send` has none.'

/** The device-model catalogue: /models. */
export function modelRoutes(auth: ReturnType<typeof authPlugin>, { models, write }: ModelRouteDeps) {
  const requestId = (headers: Record<string, unknown>) => (headers[REQUEST_ID_HEADER] as string | undefined) ?? null
  return new Elysia({ name: 'models', prefix: '/models' })
    .use(auth)
    .get('', ({ query }) => models.listModels({ limit: query.limit, offset: query.offset }), {
      auth: 'admin',
      query: ModelListQuery,
      detail: {
        tags: ['Models'],
        summary: 'List the device models',
        description: `Ordered by name, then id; 200 with [] past the end. ${CATALOGUE}`,
        responses: responses({ 200: { schema: t.Array(Model), description: 'The models' } }, 400, 401, 403, 429, 504),
      },
    })
    .get('/:id', ({ params }) => models.getModel(params.id), {
      auth: 'admin',
      params: IdParams,
      detail: {
        tags: ['Models'],
        summary: 'One device model',
        description: CATALOGUE,
        responses: responses({ 200: { schema: Model, description: 'The model' } }, 400, 401, 403, 404, 429, 504),
      },
    })
    .post(
      '',
      async ({ principal, body, set }) => {
        const user = asUser(principal)
        const created = await write(() => models.createModel(body, user.accountId, user.userId, requestId(set.headers)))
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
          description: `201 with the model and \`Location: /models/{id}\`; the server chooses its id. ${COMMANDS} ${CATALOGUE}`,
          responses: responses({ 201: { schema: Model, description: 'The new model' } }, 400, 401, 403, 409, 429, 504),
        },
      },
    )
    .patch(
      '/:id',
      async ({ principal, params, body, set }) => {
        const user = asUser(principal)
        return write(() => models.updateModel(params.id, body, user.accountId, user.userId, requestId(set.headers)))
      },
      {
        auth: 'admin',
        params: IdParams,
        body: UpdateModelBody,
        detail: {
          tags: ['Models'],
          summary: 'Change a device model',
          description: `Only the fields sent change; \`commands\` replaces the list (commands not named are removed). ${COMMANDS} ${CATALOGUE}`,
          responses: responses({ 200: { schema: Model, description: 'The model' } }, 400, 401, 403, 404, 409, 429, 504),
        },
      },
    )
    .delete(
      '/:id',
      async ({ principal, params, set }) => {
        const user = asUser(principal)
        await write(() => models.deleteModel(params.id, user.accountId, user.userId, requestId(set.headers)))
        set.status = 204
        return null
      },
      {
        auth: 'admin',
        params: IdParams,
        detail: {
          tags: ['Models'],
          summary: 'Delete a device model',
          description: `With its commands. 409 while any device on the server (of any account) still uses it. ${CATALOGUE}`,
          responses: responses({ 204: { description: 'Deleted' } }, 400, 401, 403, 404, 409, 429, 504),
        },
      },
    )
}
