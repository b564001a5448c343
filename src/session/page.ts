/**
 * The first-run setup page: plain HTML, its stylesheet and script served from the package (no
 * CDN; `type: 'file'` imports, so `bun build --compile` embeds them), under a strict CSP.
 */
import { readFileSync } from 'node:fs'
import { NotFound } from '../errors'
import noticeHtml from './page/notice.html' with { type: 'file' }
import setupCss from './page/setup.css' with { type: 'file' }
import setupHtml from './page/setup.html' with { type: 'file' }
import setupJs from './page/setup.js' with { type: 'file' }
import type { FirstRun } from './setup'

// a Map: the name comes from the URL
const ASSETS = new Map<string, { path: string; type: string }>([
  ['setup.css', { path: setupCss, type: 'text/css; charset=utf-8' }],
  ['setup.js', { path: setupJs, type: 'text/javascript; charset=utf-8' }],
])

const template = (path: unknown) => {
  let text: string | undefined
  return () => (text ??= readFileSync(path as string, 'utf8'))
}
const formTemplate = template(setupHtml)
const noticeTemplate = template(noticeHtml)

const escapeHtml = (value: string) =>
  value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

function fill(html: string, values: Record<string, string>): string {
  return html.replace(/\{\{(\w+)\}\}/g, (_, name: string) => escapeHtml(Object.hasOwn(values, name) ? values[name] : ''))
}

const HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  // the URL carries the token: never send it on, never keep a copy in a cache
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  // the script sends the form itself (fetch): a form submission of the browser's own is refused
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
}

const NOTICES = {
  used: {
    status: 403,
    heading: 'This setup link has been used',
    message: 'The server is set up. Sign in with the name and password chosen during setup.',
    link: true,
  },
  wrong: {
    status: 403,
    heading: 'This setup link is not valid',
    message: 'Open the link the server wrote to its log when it last started (it changes at every start), or run `tracker init` on the server.',
    link: false,
  },
  done: {
    status: 409,
    heading: 'This server is already set up',
    message: 'It has a user already. Sign in with your name and password, or ask an administrator of your account for one.',
    link: true,
  },
} as const

function notice(kind: keyof typeof NOTICES): Response {
  const { status, heading, message, link } = NOTICES[kind]
  return new Response(fill(noticeTemplate(), { heading, message, linkHidden: link ? '' : 'hidden' }), { status, headers: HEADERS })
}

/** GET /setup?token=: the form while the token is the current one and no user exists, else a page that says why not */
export async function setupPage(firstRun: FirstRun, token: string): Promise<Response> {
  const check = firstRun.check(token)
  if (check === 'used') return notice('used')
  if (!(await firstRun.needed())) return notice('done')
  if (check === 'wrong') return notice('wrong')
  return new Response(fill(formTemplate(), { token }), { headers: HEADERS })
}

export function setupAssetRoute(name: string): Response {
  const asset = ASSETS.get(name)
  if (!asset) throw new NotFound(`No asset ${name}`)
  return new Response(Bun.file(asset.path), { headers: { 'content-type': asset.type, 'cache-control': 'public, max-age=300', 'x-content-type-options': 'nosniff' } })
}
