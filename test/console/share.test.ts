/**
 * The share-link view's helpers, against the server they talk to: the permission table and the
 * bounds are the server's, the QR code reads back (jsQR, an independent decoder) as the short
 * link, and the list keeps links it saw end. The view itself is tried in chromium in
 * share.browser.test.ts.
 */
import { describe, expect, test } from 'bun:test'
import jsQR from 'jsqr'
import { customTtlSeconds, linkState, MAX_DEVICES, MAX_TTL_S, mergeLinks, MIN_TTL_S, PERMISSIONS, qrCode, until } from '../../src/console/app/share'
import type { ShareLink } from '../../src/console/app/types'
import { MAX_DEVICES as API_MAX_DEVICES, MAX_TTL, MIN_TTL } from '../../src/share/model'
import { PERMISSION } from '../../src/share/permissions'

/** The QR code's path drawn as pixels (`scale` a module), black on white, as a camera would see it. */
function rasterize({ size, path }: { size: number; path: string }, scale = 4): Uint8ClampedArray {
  const width = size * scale
  const pixels = new Uint8ClampedArray(width * width * 4).fill(255)
  for (const [, x, y, w] of path.matchAll(/M(\d+) (\d+)h(\d+)v1h-\d+z/g)) {
    for (let row = Number(y) * scale; row < (Number(y) + 1) * scale; row++) {
      for (let col = Number(x) * scale; col < (Number(x) + Number(w)) * scale; col++) pixels.fill(0, (row * width + col) * 4, (row * width + col) * 4 + 3)
    }
  }
  return pixels
}

const link = (over: Partial<ShareLink>): ShareLink => ({
  id: '00000000-0000-4000-8000-000000000001',
  account: 'a',
  devices: [],
  acl: [],
  revoked: false,
  expires_at: '2026-01-01T12:00:00.000Z',
  unique_views: 0,
  last_accessed_at: null,
  created_at: '2026-01-01T10:00:00.000Z',
  ...over,
})

describe('the share view against the server', () => {
  test('offers the server’s permission table and bounds', () => {
    expect(Object.fromEntries(PERMISSIONS.map((p) => [p.name, p.id]))).toEqual(PERMISSION)
    expect([MIN_TTL_S, MAX_TTL_S, MAX_DEVICES]).toEqual([MIN_TTL, MAX_TTL, API_MAX_DEVICES])
  })

  test('a custom expiry is a whole number of units within the API’s bounds', () => {
    expect(customTtlSeconds('2', 'hours')).toBe(7200)
    expect(customTtlSeconds(' 365 ', 'days')).toBe(MAX_TTL)
    expect(customTtlSeconds('1', 'minutes')).toBe(MIN_TTL)
    for (const bad of ['366', '0', '', '1.5', '-1', 'abc', '1e3']) expect(customTtlSeconds(bad, 'days')).toBeNull()
  })
})

describe('the QR code', () => {
  test('reads back as the short link, long or short', () => {
    for (const url of ['http://127.0.0.1:3000/s/Ab3dE9xQ', `https://tracker.example.org/fleet/s/${'x'.repeat(120)}`]) {
      const qr = qrCode(url)
      const scale = 4
      const decoded = jsQR(rasterize(qr, scale), qr.size * scale, qr.size * scale)
      expect(decoded?.data).toBe(url)
    }
  })
})

describe('the list of links', () => {
  const t = Date.parse('2026-01-01T11:00:00.000Z')

  test('a link is active, expired at its expiry, or revoked', () => {
    expect(linkState(link({}), t)).toBe('active')
    expect(linkState(link({}), Date.parse('2026-01-01T12:00:00.000Z'))).toBe('expired')
    expect(linkState(link({ revoked: true }), t)).toBe('revoked')
  })

  test('time left reads in the unit that fits: a day is 24 h, not 23', () => {
    expect(until(t + 86_400_000 - 1000, t)).toEqual({ hours: 24 })
    expect(until(t + 3_599_000, t)).toEqual({ hours: 1 })
    expect(until(t + 125_000, t)).toEqual({ minutes: 2 })
    expect(until(t + 7 * 86_400_000 - 1000, t)).toEqual({ days: 7 })
    expect(until(t - 5000, t)).toEqual({ minutes: 0 })
  })

  test('keeps a link that left the server’s list once expired, drops one that left for another reason, forgets at another user', () => {
    const expiring = link({ id: '00000000-0000-4000-8000-00000000000a', created_at: '2026-01-01T09:00:00.000Z' })
    const taken = link({ id: '00000000-0000-4000-8000-00000000000b', expires_at: '2026-01-02T00:00:00.000Z' })
    const fresh = link({ id: '00000000-0000-4000-8000-00000000000c', created_at: '2026-01-01T10:30:00.000Z', expires_at: '2026-01-02T00:00:00.000Z' })
    const first = mergeLinks('u1', [], [expiring, taken], t)
    expect(first.map((l) => l.id)).toEqual([taken.id, expiring.id])
    const later = Date.parse('2026-01-01T13:00:00.000Z')
    const second = mergeLinks('u1', first, [fresh], later)
    expect(second.map((l) => [l.id, linkState(l, later)])).toEqual([
      [fresh.id, 'active'],
      [expiring.id, 'expired'],
    ])
    // extended again: back in the server's list, once
    expect(mergeLinks('u1', second, [fresh, expiring], later).map((l) => l.id)).toEqual([fresh.id, expiring.id])
    expect(mergeLinks('u2', [], [], later)).toEqual([])
  })
})
