/**
 * Who is looking at a shared link, for `unique_views`: the page gives each browser a random
 * viewer id in a cookie, which its API calls carry; a caller without the cookie is told apart
 * by a hash of its address and user agent. Neither is personal data we keep in the clear.
 */

export const VIEWER_COOKIE = 'tracker_viewer'
const VIEWER_ID = /^[A-Za-z0-9_-]{22}$/
const ONE_YEAR = 365 * 24 * 3600

/** The cookie's viewer id, when the request carries a well-formed one. */
export function viewerCookie(request: Request): string | null {
  const header = request.headers.get('cookie')
  if (!header) return null
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === VIEWER_COOKIE) {
      const value = part.slice(eq + 1).trim()
      return VIEWER_ID.test(value) ? value : null
    }
  }
  return null
}

/** The viewer a request counts as: its cookie, else its address and user agent. */
export function viewerOf(request: Request, client: string): string {
  const cookie = viewerCookie(request)
  if (cookie) return `c:${cookie}`
  const agent = request.headers.get('user-agent') ?? ''
  return `h:${new Bun.CryptoHasher('sha256').update(`${client}\n${agent}`).digest('base64url').slice(0, 22)}`
}

/** A fresh viewer id and the Set-Cookie header value that gives it to the browser. */
export function newViewer(secure: boolean): { viewer: string; setCookie: string } {
  const id = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('base64url')
  // Lax, not Strict: a link opened from a mail or chat is a cross-site navigation that must carry it
  const setCookie = `${VIEWER_COOKIE}=${id}; Path=/; Max-Age=${ONE_YEAR}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`
  return { viewer: `c:${id}`, setCookie }
}
