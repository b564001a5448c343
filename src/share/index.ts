import { Elysia, t } from 'elysia'
import { NotFound } from '../errors'
import { asUser, type authPlugin } from '../http/auth'
import { IdParams, responses } from '../http/model'
import { CreateShareBody, ShareCreated, ShareLink, ShareLinkDetail, ShareLinkListed, UpdateShareBody } from './model'
import { linkPage } from './page'
import type { ShareService } from './service'

const MANAGE =
  'Managing links needs an API key: a share token gets 403. Who sees a link: you list, read, change and revoke only the ' +
  'links of your account whose every device you reach now (through your groups); any other link, another account\'s ' +
  'included, is 404 and its token is never shown. Reach is decided on each request: a link whose devices you no longer ' +
  'all reach (a group change) leaves your list and is 404 at once. An account admin sees all of the account\'s links ' +
  '(users have no role yet: today everyone is a member). ' +
  'A link ends with the user who made it: deleting them revokes it; a device they no longer reach (a group, role or ' +
  'account change) leaves it for good, and a link left with none is revoked. A share token spends the budget of the user who ' +
  'made the link, with that user\'s own keys and sessions: live streams and history requests in flight (see those routes).'

/** The share-link API under /devices/share, and the short links under /s. */
export function shareRoutes(auth: ReturnType<typeof authPlugin>, shares: ShareService) {
  return (
    new Elysia({ name: 'share' })
      .use(auth)
      // Static paths: the router prefers them to /devices/:id, so "share" is never read as a device id.
      .get('/devices/share', ({ principal }) => shares.list(asUser(principal)), {
        auth: 'user',
        detail: {
          tags: ['Share links'],
          responses: responses({ 200: { schema: t.Array(ShareLinkListed), description: 'The active links' } }, 401, 403, 429, 504),
          summary: 'The active share links you may see',
          description: `Links neither revoked nor expired, newest first, with their token and original_url (an empty array when there are none). ${MANAGE}`,
        },
      })
      .post('/devices/share', ({ principal, body }) => shares.create(asUser(principal), body), {
        auth: 'user',
        body: CreateShareBody,
        detail: {
          tags: ['Share links'],
          responses: responses({ 200: { schema: ShareCreated, description: 'The new link' } }, 400, 401, 403, 404, 409, 429, 504),
          summary: 'Create a share link',
          description:
            'Shares devices you can reach (else 404) until now + ttl. The token is random (256 bits, base64url); ' +
            '`original_url` is the web page, `short_url` redirects to it while the link is active. Without `acl`, the link grants ' +
            'all three permissions. Unknown fields, a repeated device, an unknown permission id are 400. A user may have made at most ' +
            'MAX_SHARE_LINKS_PER_USER (default 100) active links (neither revoked nor expired): one more is 409 until one is revoked ' +
            `or expires. ${MANAGE}`,
        },
      })
      .get('/devices/share/:id', ({ principal, params }) => shares.get(asUser(principal), params.id), {
        auth: 'user',
        params: IdParams,
        detail: {
          tags: ['Share links'],
          responses: responses({ 200: { schema: ShareLinkDetail, description: 'The link' } }, 400, 401, 403, 404, 429, 504),
          summary: 'One share link',
          description: `The list shape plus \`short_url\`; revoked and expired links too (when you may see them). ${MANAGE}`,
        },
      })
      .patch('/devices/share/:id', ({ principal, params, body }) => shares.update(asUser(principal), params.id, body), {
        auth: 'user',
        params: IdParams,
        body: UpdateShareBody,
        detail: {
          tags: ['Share links'],
          responses: responses({ 200: { schema: ShareLink, description: 'The updated link' } }, 400, 401, 403, 404, 409, 429, 504),
          summary: 'Change the devices, lifetime or permissions of a share link',
          description:
            'Only the fields sent change: `devices` replaces the list, `ttl` recomputes expires_at = now + ttl (an expired link ' +
            'comes back to life, counting again against its creator\'s MAX_SHARE_LINKS_PER_USER: 409 when they are at it; a revoked one ' +
            'stays revoked), `acl` replaces the permissions. The token\'s cache entry is dropped, ' +
            `so the change applies from the next request; open live streams of the link are closed. ${MANAGE}`,
        },
      })
      .delete(
        '/devices/share/:id',
        async ({ principal, params }) => {
          await shares.revoke(asUser(principal), params.id)
          return new Response(null, { status: 204 })
        },
        {
          auth: 'user',
          params: IdParams,
          detail: {
            tags: ['Share links'],
            responses: responses({ 204: { description: 'Revoked' } }, 400, 401, 403, 404, 429, 504),
            summary: 'Revoke a share link',
            description: `From the next request its token is 401, its page says the link has ended, its short link is 404. Idempotent. ${MANAGE}`,
          },
        },
      )
      .get(
        '/s/:code',
        async ({ params, request }) => {
          let location: string
          try {
            location = await shares.redirectTarget(params.code)
          } catch (error) {
            // a person who opened the short link gets the page original_url would show; API clients the problem
            if (!(error instanceof NotFound) || !acceptsHtml(request)) throw error
            // redirectTarget's only signal of a known link that ended is its detail
            const ended = /expired|revoked/i.test(error.detail)
            return linkPage(ended ? 'ended' : 'unknown', '../share/assets/', { vary: 'Accept' })
          }
          return new Response(null, { status: 302, headers: { location, 'referrer-policy': 'no-referrer', 'cache-control': 'no-store' } })
        },
        {
          params: t.Object({ code: t.String() }),
          detail: {
            tags: ['Share links'],
            responses: shortLinkResponses(),
            summary: 'Short link',
            description:
              "No authentication. 302 to the link's original_url while it is active. Otherwise, for a browser (`Accept` naming " +
              '`text/html`), the HTML page original_url would show: 410 "This shared link has ended" when the link expired or was ' +
              'revoked, 404 "This link is not valid" when the code is unknown; for any other client a 404 problem in both cases.',
            security: [],
          },
        },
      )
  )
}

const acceptsHtml = (request: Request) => /\btext\/html\b/i.test(request.headers.get('accept') ?? '')

function shortLinkResponses() {
  const page = (description: string) => ({ description, content: { 'text/html': { schema: t.String() } } })
  const documented = responses({ 302: { description: 'Location: original_url' } }, 404)
  return {
    ...documented,
    404: { ...documented[404], description: 'Unknown, expired or revoked (a problem); for a browser, unknown (an HTML page)', content: { ...documented[404].content, ...page('').content } },
    410: page('Expired or revoked, for a browser (an HTML page)'),
  }
}
