/**
 * Administration routes: /me, /groups, /users, /users/{id}/keys and /audit. They parse, call the
 * services (users.ts, groups.ts, keys.ts, me.ts, audit.ts) and shape the answer. Writes wait for
 * another process's write lock asynchronously (store/busy.ts: 504 after 5 s; the people store
 * waits inside its units of work); a password is hashed before its unit of work.
 */
import { Elysia, t } from 'elysia'
import { Invalid } from '../errors'
import { asUser, type authPlugin } from '../http/auth'
import { IdParams, responses } from '../http/model'
import { loggedRequestId } from '../ops/requests'
import type { UserPrincipal } from '../principal'
import type { AuditStore } from '../store/audit'
import type { PeopleStore } from '../store/people'
import { actorOf, type AdminDeps } from './actor'
import { createGroup, deleteGroup, getGroup, listGroups, updateGroup } from './groups'
import { createKey, listKeys, revokeKey } from './keys'
import { describePrincipal, type MeDeps } from './me'
import {
  ApiKey,
  ApiKeyCreated,
  AuditEntry,
  AuditQuery,
  CreateGroupBody,
  CreateKeyBody,
  CreateUserBody,
  Group,
  KeyParams,
  Me,
  PageQuery,
  UpdateGroupBody,
  UpdateUserBody,
  User,
} from './model'
import { createUser, deleteUser, getUser, hashPassword, listUsers, updateUser } from './users'

export interface AdminRoutesDeps extends AdminDeps {
  me: MeDeps
  /** accounts, users, groups (store/people.ts): what users.ts and groups.ts read and write */
  people: PeopleStore
  /** the audit log's reads (GET /audit) */
  auditLog: AuditStore
}

const TAGS = ['Administration']
/** what a change of reach does to share links (store/shareLinks.ts) */
const LINKS_FOLLOW =
  'A share link serves only what the user who made it still reaches: a device one no longer reaches leaves the links they made, for good, ' +
  'and a link left with none is revoked, at once.'
const ADMIN_ONLY = 'For account admins: a member gets 403, a share token 403 (401 once expired or revoked); another account\'s anything is 404.'
const LISTS = 'Ordered by name, then id; `limit` 1–1000 (default 99), `offset`; an empty page is `[]`.'
const BODIES = 'Unknown fields are 400; ids named in the body that are not of your account are 404 naming their place (`errors[].path`, e.g. `/devices/2`); a repeated id is 400. One transaction: a refused request changes nothing.'

export function adminRoutes(auth: ReturnType<typeof authPlugin>, deps: AdminRoutesDeps) {
  const by = (principal: UserPrincipal, set: { headers: Record<string, unknown> }) => actorOf(principal, loggedRequestId(set))
  const created = (set: { status?: unknown; headers: Record<string, unknown> }, location: string) => {
    set.status = 201
    set.headers.location = location
  }
  const noContent = () => new Response(null, { status: 204 })

  return (
    new Elysia({ name: 'admin' })
      .use(auth)
      .get('/me', ({ principal }) => describePrincipal(deps.me, principal), {
        auth: 'any',
        detail: {
          tags: TAGS,
          summary: 'Who this credential is',
          description:
            'An API key or session cookie: `{ kind: "user", id, name, role, account: { id, name } }`. A share token: `{ kind: "share", devices, expires_at, acl }` ' +
            '(its devices as GET /devices lists them; 401 once the link has expired or was revoked).',
          responses: responses({ 200: { schema: Me, description: 'The user, or the share link' } }, 401, 429),
        },
      })

      // ---- groups
      .get('/groups', ({ principal, query, set }) => listGroups(deps, by(asUser(principal), set), query), {
        auth: 'user',
        query: PageQuery,
        detail: {
          tags: TAGS,
          summary: 'Groups',
          description: `An admin: every group of the account; a member: the groups they belong to. ${LISTS} A share token gets 403.`,
          responses: responses({ 200: { schema: t.Array(Group), description: 'The groups' } }, 400, 401, 403, 429),
        },
      })
      .get('/groups/:id', ({ principal, params, set }) => getGroup(deps, by(asUser(principal), set), params.id), {
        auth: 'user',
        params: IdParams,
        detail: {
          tags: TAGS,
          summary: 'One group',
          description: 'An admin: any group of the account; a member: one they belong to (any other is 404). A share token gets 403.',
          responses: responses({ 200: { schema: Group, description: 'The group' } }, 400, 401, 403, 404, 429),
        },
      })
      .post(
        '/groups',
        async ({ principal, body, set }) => {
          const group = await createGroup(deps, by(asUser(principal), set), body)
          created(set, `/groups/${group.id}`)
          return group
        },
        {
          auth: 'admin',
          body: CreateGroupBody,
          detail: {
            tags: TAGS,
            summary: 'Create a group',
            description: `201 with the group and its Location. Names need not be unique. ${BODIES} ${ADMIN_ONLY}`,
            responses: responses({ 201: { schema: Group, description: 'The new group' } }, 400, 401, 403, 404, 429, 504),
          },
        },
      )
      .patch('/groups/:id', ({ principal, params, body, set }) => updateGroup(deps, by(asUser(principal), set), params.id, body), {
        auth: 'admin',
        params: IdParams,
        body: UpdateGroupBody,
        detail: {
          tags: TAGS,
          summary: 'Rename a group, or replace its devices or users',
          description: `Only the fields sent change; \`devices\` and \`users\` replace the lists. Reach follows at once. ${LINKS_FOLLOW} ${BODIES} ${ADMIN_ONLY}`,
          responses: responses({ 200: { schema: Group, description: 'The group' } }, 400, 401, 403, 404, 429, 504),
        },
      })
      .delete(
        '/groups/:id',
        async ({ principal, params, set }) => {
          await deleteGroup(deps, by(asUser(principal), set), params.id)
          return noContent()
        },
        {
          auth: 'admin',
          params: IdParams,
          detail: {
            tags: TAGS,
            summary: 'Delete a group',
            description: `204. Its devices and users stay; its members no longer reach its devices through it. ${LINKS_FOLLOW} ${ADMIN_ONLY}`,
            responses: responses({ 204: { description: 'Deleted' } }, 400, 401, 403, 404, 429, 504),
          },
        },
      )

      // ---- users
      .get('/users', ({ principal, query, set }) => listUsers(deps, by(asUser(principal), set), query), {
        auth: 'admin',
        query: PageQuery,
        detail: {
          tags: TAGS,
          summary: "The account's users",
          description: `${LISTS} ${ADMIN_ONLY}`,
          responses: responses({ 200: { schema: t.Array(User), description: 'The users' } }, 400, 401, 403, 429),
        },
      })
      .get('/users/:id', ({ principal, params, set }) => getUser(deps, by(asUser(principal), set), params.id), {
        auth: 'admin',
        params: IdParams,
        detail: {
          tags: TAGS,
          summary: 'One user',
          description: ADMIN_ONLY,
          responses: responses({ 200: { schema: User, description: 'The user' } }, 400, 401, 403, 404, 429),
        },
      })
      .post(
        '/users',
        async ({ principal, body, set }) => {
          const actor = by(asUser(principal), set)
          const password = body.password === undefined ? undefined : await hashPassword(body.password)
          const user = await createUser(deps, actor, { ...body, password })
          created(set, `/users/${user.id}`)
          return user
        },
        {
          auth: 'admin',
          body: CreateUserBody,
          detail: {
            tags: TAGS,
            summary: 'Create a user',
            description:
              `201 with the user and its Location. \`name\` is the sign-in name: unique across the server, in any case (else 409). ` +
              `Without \`password\` the user cannot sign in to the console (a key still works). ${BODIES} ${ADMIN_ONLY}`,
            responses: responses({ 201: { schema: User, description: 'The new user' } }, 400, 401, 403, 404, 409, 429, 504),
          },
        },
      )
      .patch(
        '/users/:id',
        async ({ principal, params, body, set }) => {
          const actor = by(asUser(principal), set)
          const password = body.password === undefined ? undefined : await hashPassword(body.password)
          return updateUser(deps, actor, params.id, { ...body, password })
        },
        {
          auth: 'admin',
          params: IdParams,
          body: UpdateUserBody,
          detail: {
            tags: TAGS,
            summary: "Change a user's name, role, groups or password",
            description:
              'Only the fields sent change; `groups` replaces the list. A new password ends the user\'s console sessions (their keys ' +
              "stay). Demoting the account's last admin is 409, as is a name already taken. A role change applies from the user's next " +
              `request. ${LINKS_FOLLOW} ${BODIES} ${ADMIN_ONLY}`,
            responses: responses({ 200: { schema: User, description: 'The user' } }, 400, 401, 403, 404, 409, 429, 504),
          },
        },
      )
      .delete(
        '/users/:id',
        async ({ principal, params, set }) => {
          await deleteUser(deps, by(asUser(principal), set), params.id)
          return noContent()
        },
        {
          auth: 'admin',
          params: IdParams,
          detail: {
            tags: TAGS,
            summary: 'Delete a user',
            description:
              "204. Their keys and sessions go with them: the next request with one is 401. The share links they made are revoked: their tokens are 401 at once, their live streams end. Deleting the account's " +
              `last admin is 409. ${ADMIN_ONLY}`,
            responses: responses({ 204: { description: 'Deleted' } }, 400, 401, 403, 404, 409, 429, 504),
          },
        },
      )

      // ---- keys
      .get('/users/:id/keys', ({ principal, params, query, set }) => listKeys(deps, by(asUser(principal), set), params.id, query), {
        auth: 'user',
        params: IdParams,
        query: PageQuery,
        detail: {
          tags: TAGS,
          summary: "A user's API keys",
          description:
            "Your own keys, or (an admin) any user's of the account; another member's are 403, another account's user 404. " +
            `Never the secret. \`last_used_at\` is written at most once a minute a key. ${LISTS}`,
          responses: responses({ 200: { schema: t.Array(ApiKey), description: 'The keys' } }, 400, 401, 403, 404, 429),
        },
      })
      .post(
        '/users/:id/keys',
        async ({ principal, params, body, set }) => {
          const expiresAtMs = body.expires_at === undefined ? null : typeof body.expires_at === 'number' ? body.expires_at * 1000 : Date.parse(body.expires_at)
          const key = await createKey(deps, by(asUser(principal), set), params.id, { name: body.name, expiresAtMs })
          set.status = 201
          return key
        },
        {
          auth: 'user',
          params: IdParams,
          body: CreateKeyBody,
          detail: {
            tags: TAGS,
            summary: 'Create an API key',
            description:
              'For yourself, or (an admin) any user of the account. 201 with `key`, the secret, shown this once: only its SHA-256 is ' +
              `kept. \`expires_at\` must be in the future (400). ${BODIES}`,
            responses: responses({ 201: { schema: ApiKeyCreated, description: 'The new key, with its secret' } }, 400, 401, 403, 404, 429, 504),
          },
        },
      )
      .delete(
        '/users/:id/keys/:keyId',
        async ({ principal, params, set }) => {
          await revokeKey(deps, by(asUser(principal), set), params.id, params.keyId)
          return noContent()
        },
        {
          auth: 'user',
          params: KeyParams,
          detail: {
            tags: TAGS,
            summary: 'Delete an API key',
            description: 'Yours, or (an admin) any user\'s of the account. 204; the very next request with the key is 401, in every server process.',
            responses: responses({ 204: { description: 'Deleted' } }, 400, 401, 403, 404, 429, 504),
          },
        },
      )

      // ---- audit
      .get(
        '/audit',
        ({ principal, query }) => {
          if (query.from !== undefined && query.to !== undefined && query.from > query.to) throw Invalid.field('/from', 'must not be after to')
          return deps.auditLog.list(asUser(principal).accountId, {
            fromMs: query.from === undefined ? undefined : query.from * 1000,
            // `to` names a whole second: every change within it is in
            toMs: query.to === undefined ? undefined : query.to * 1000 + 999,
            limit: query.limit,
            offset: query.offset,
          })
        },
        {
          auth: 'admin',
          query: AuditQuery,
          detail: {
            tags: TAGS,
            summary: "The account's audit log",
            description:
              'Every administration change of the account, newest first: who (`actor`: a user id, or `cli` for the command line), ' +
              'what (`action`, `object_type`, `object_id`), when, and the request\'s X-Request-Id. Never a password or key. ' +
              `\`from\` and \`to\` are Unix seconds, both inclusive; \`limit\` 1–1000 (default 99), \`offset\`; none is \`[]\`. ${ADMIN_ONLY}`,
            responses: responses({ 200: { schema: t.Array(AuditEntry), description: 'The entries, newest first' } }, 400, 401, 403, 429),
          },
        },
      )
  )
}
