import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../../src/config'
import { LivePositions, type LiveFix, type LiveListener } from '../../src/ingest/live'
import { MAX_STREAMS_PER_PRINCIPAL } from '../../src/stream/service'
import { ids, keys, openWorld, problem, type EngineWorld } from '../support/world'
import { sseBlocks } from '../support/sse'

/** LivePositions that knows how many subscribers it has, to see streams let go. */
class CountingLive extends LivePositions {
  subscribers = 0
  override subscribe(listener: LiveListener): () => void {
    this.subscribers++
    const unsubscribe = super.subscribe(listener)
    return () => {
      this.subscribers--
      return unsubscribe()
    }
  }
}

let world: EngineWorld
let live: CountingLive
beforeEach(async () => {
  live = new CountingLive()
  world = await openWorld(undefined, { live })
})
afterEach(() => world.close())

const KEY = (id: string) => world.deviceKey(id)
const fix = async (id: string, timestamp: number, latitude = 48.85, longitude = 2.35, speed: number | null = 30): Promise<LiveFix> => ({
  deviceKey: await KEY(id), timestamp, latitude, longitude, speed, course: null,
})

/** Reads SSE events from a response body, one at a time. */
const events = sseBlocks

const fixData = (block: string | null) => {
  expect(block).toStartWith('event: fix\ndata: ')
  return JSON.parse(block!.slice('event: fix\ndata: '.length))
}

async function share(devices: string[]) {
  const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices, ttl: 3600 } })
  return (await res.json()) as { id: string; token: string }
}

describe('GET /devices/stream', () => {
  test('a share token gets its link\'s fixes only, newest known first, as event: fix', async () => {
    live.publish(await fix(ids.truck2, 1764000000, 45.75, 4.85, 0))
    const link = await share([ids.truck2, ids.van1])
    const res = await world.call('GET', '/devices/stream', { token: link.token })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('text/event-stream')
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(res.headers.get('referrer-policy')).toBe('no-referrer')

    const stream = events(res)
    expect(await stream.next()).toBe('retry: 3000')
    expect(fixData(await stream.next())).toEqual({ id: ids.truck2, latitude: 45.75, longitude: 4.85, speed: 0, course: null, timestamp: 1764000000 })

    live.publish(await fix(ids.truck1, 1764000010)) // not in the link
    live.publish(await fix(ids.van1, 1764000020, 48.1, 2.1, null))
    expect(fixData(await stream.next())).toEqual({ id: ids.van1, latitude: 48.1, longitude: 2.1, speed: null, course: null, timestamp: 1764000020 })
    await stream.cancel()
  })

  test('a user gets the devices they reach', async () => {
    const stream = events(await world.call('GET', '/devices/stream', { token: keys.bob }))
    expect(await stream.next()).toBe('retry: 3000')
    live.publish(await fix(ids.truck1, 1764000001)) // trucks: not bob's
    live.publish(await fix(ids.globexCar, 1764000002))
    live.publish(await fix(ids.truck2, 1764000003))
    expect(fixData(await stream.next()).id).toBe(ids.truck2)
    await stream.cancel()
  })

  test('unsubscribes when the client goes away', async () => {
    const stream = events(await world.call('GET', '/devices/stream', { token: keys.alice }))
    await stream.next()
    expect(live.subscribers).toBe(1)
    await stream.cancel()
    expect(live.subscribers).toBe(0)

    const aborted = new AbortController()
    const res = await world.app.handle(new Request('http://localhost/devices/stream', { headers: { authorization: `Bearer ${keys.alice}` }, signal: aborted.signal }))
    expect(res.status).toBe(200)
    expect(live.subscribers).toBe(1)
    aborted.abort()
    expect(live.subscribers).toBe(0)
  })

  test('ends when the link is revoked or patched; reconnecting with a revoked token is 401', async () => {
    const link = await share([ids.truck1])
    const first = events(await world.call('GET', '/devices/stream', { token: link.token }))
    await first.next()
    await world.call('PATCH', `/devices/share/${link.id}`, { token: keys.alice, body: { devices: [ids.truck2] } })
    expect(await first.next()).toBeNull()

    const second = events(await world.call('GET', '/devices/stream', { token: link.token }))
    await second.next()
    await world.call('DELETE', `/devices/share/${link.id}`, { token: keys.alice })
    expect(await second.next()).toBeNull()
    expect(live.subscribers).toBe(0)
    await problem(await world.call('GET', '/devices/stream', { token: link.token }), 401)
  })

  test('sends heartbeats, and ends at a heartbeat once the link has expired', async () => {
    await world.close()
    live = new CountingLive()
    world = await openWorld(undefined, { live, streamHeartbeatMs: 20 })
    const link = await share([ids.truck1])
    const stream = events(await world.call('GET', '/devices/stream', { token: link.token }))
    expect(await stream.next()).toBe('retry: 3000')
    expect(await stream.next()).toBe(': heartbeat')
    world.clock.advance(3600_000)
    expect(await stream.next()).toBeNull()
    expect(live.subscribers).toBe(0)
  })

  test('a user taken out of a group stops getting its devices on an open stream; one put in a group starts', async () => {
    const alice = events(await world.call('GET', '/devices/stream', { token: keys.alice }))
    const bob = events(await world.call('GET', '/devices/stream', { token: keys.bob }))
    expect(await alice.next()).toBe('retry: 3000')
    expect(await bob.next()).toBe('retry: 3000')
    live.publish(await fix(ids.truck1, 1764000001))
    expect(fixData(await alice.next()).id).toBe(ids.truck1)

    // as an import or another server process would: straight in the database
    await world.execute(sql`DELETE FROM user_groups WHERE user_id = ${ids.alice} AND group_id = ${ids.trucks}`)
    await world.execute(sql`INSERT INTO user_groups (user_id, group_id) VALUES (${ids.bob}, ${ids.trucks})`)
    live.publish(await fix(ids.truck1, 1764000002)) // trucks only: alice lost it, bob gained it
    live.publish(await fix(ids.van1, 1764000003)) // vans: both still reach it
    expect(fixData(await alice.next())).toMatchObject({ id: ids.van1, timestamp: 1764000003 })
    expect(fixData(await bob.next())).toMatchObject({ id: ids.truck1, timestamp: 1764000002 })
    expect(fixData(await bob.next())).toMatchObject({ id: ids.van1, timestamp: 1764000003 })
    await alice.cancel()
    await bob.cancel()
  })

  test('a device that comes into reach starts with its newest fix', async () => {
    live.publish(await fix(ids.truck1, 1764000001))
    const bob = events(await world.call('GET', '/devices/stream', { token: keys.bob }))
    expect(await bob.next()).toBe('retry: 3000')
    await world.execute(sql`INSERT INTO user_groups (user_id, group_id) VALUES (${ids.bob}, ${ids.trucks})`)
    live.publish(await fix(ids.van1, 1764000005))
    expect(fixData(await bob.next())).toMatchObject({ id: ids.truck1, timestamp: 1764000001 })
    expect(fixData(await bob.next())).toMatchObject({ id: ids.van1, timestamp: 1764000005 })
    await bob.cancel()
  })

  test('a device that comes into reach with no fix held in memory starts with its newest stored one', async () => {
    const yesterday = Math.floor(world.clock.now() / 1000) - 86_400
    // an imported history: stored, never published
    await world.importMore({ positions: [{ device: ids.truck1, timestamp: yesterday, latitude: 45.75, longitude: 4.85, speed: 12.5 }] })
    const bob = events(await world.call('GET', '/devices/stream', { token: keys.bob }))
    expect(await bob.next()).toBe('retry: 3000')
    await world.execute(sql`INSERT INTO user_groups (user_id, group_id) VALUES (${ids.bob}, ${ids.trucks})`)
    live.publish(await fix(ids.van1, 1764000005))
    expect(fixData(await bob.next())).toMatchObject({ id: ids.truck1, timestamp: yesterday, latitude: 45.75, longitude: 4.85 })
    expect(fixData(await bob.next())).toMatchObject({ id: ids.van1, timestamp: 1764000005 })
    await bob.cancel()
  })

  test('a share stream ends at the link\'s expires_at, by itself, with nothing sent after it', async () => {
    const link = await share([ids.truck1])
    const { expires_at } = (await (await world.call('GET', `/devices/share/${link.id}`, { token: keys.alice })).json()) as { expires_at: string }
    world.clock.set(Date.parse(expires_at) - 50) // 50 ms of the link's life left, on a real timer
    const stream = events(await world.call('GET', '/devices/stream', { token: link.token }))
    expect(await stream.next()).toBe('retry: 3000')
    expect(await stream.next()).toBeNull() // the heartbeat is 15 s away: only an expiry timer ends it now
    expect(live.subscribers).toBe(0)
  })

  test('a fix published at expires_at is not sent: the stream ends instead', async () => {
    const link = await share([ids.truck1])
    const stream = events(await world.call('GET', '/devices/stream', { token: link.token }))
    expect(await stream.next()).toBe('retry: 3000')
    live.publish(await fix(ids.truck1, 1764000001))
    expect(fixData(await stream.next()).id).toBe(ids.truck1)
    world.clock.advance(3600_000) // the link's ttl: expires_at is now
    live.publish(await fix(ids.truck1, 1764000002))
    expect(await stream.next()).toBeNull()
  })

  test(`the ${MAX_STREAMS_PER_PRINCIPAL + 1}th stream of one user is 429 with Retry-After; closing one frees its slot`, async () => {
    const open = () => world.call('GET', '/devices/stream', { token: keys.alice })
    const streams = []
    for (let i = 0; i < MAX_STREAMS_PER_PRINCIPAL; i++) {
      const res = await open()
      expect(res.status).toBe(200)
      streams.push(events(res))
    }
    const refused = await open()
    expect(refused.headers.get('retry-after')).toBe('15')
    expect((await problem(refused, 429)).detail).toContain(`${MAX_STREAMS_PER_PRINCIPAL}`)

    // another user has slots of their own; a share link alice made spends alice's
    const bob = await world.call('GET', '/devices/stream', { token: keys.bob })
    expect(bob.status).toBe(200)
    const link = await share([ids.truck1])
    await problem(await world.call('GET', '/devices/stream', { token: link.token }), 429)

    await streams.pop()!.cancel()
    const again = await open()
    expect(again.status).toBe(200)
    await problem(await open(), 429)
    for (const stream of [...streams, events(again), events(bob)]) await stream.cancel()
    expect(live.subscribers).toBe(0)
    expect((await open()).status).toBe(200)
  })

  test('without a token it is 401', async () => {
    await problem(await world.call('GET', '/devices/stream'), 401)
  })
})

describe('live stream budgets: links do not multiply them', () => {
  test(`the links of one user share that user's ${MAX_STREAMS_PER_PRINCIPAL} streams, with the user's own key; another user keeps theirs`, async () => {
    const links = await Promise.all(Array.from({ length: 8 }, () => share([ids.truck1, ids.truck2])))
    const streams = []
    // two streams through each of 8 links: the creator's 16
    for (const link of links) {
      for (let i = 0; i < 2; i++) {
        const res = await world.call('GET', '/devices/stream', { token: link.token })
        expect(res.status).toBe(200)
        streams.push(events(res))
      }
    }
    expect(MAX_STREAMS_PER_PRINCIPAL).toBe(16)
    // the 17th: through a link, a fresh link, or the creator's own key
    const refused = await world.call('GET', '/devices/stream', { token: links[0].token })
    expect(refused.headers.get('retry-after')).toBe('15')
    expect((await problem(refused, 429)).detail).toContain('the user who made this link')
    await problem(await world.call('GET', '/devices/stream', { token: (await share([ids.truck1])).token }), 429)
    await problem(await world.call('GET', '/devices/stream', { token: keys.alice }), 429)

    const bob = await world.call('GET', '/devices/stream', { token: keys.bob })
    expect(bob.status).toBe(200)
    // one closed through any link frees a slot for any of them
    await streams.pop()!.cancel()
    const again = await world.call('GET', '/devices/stream', { token: keys.alice })
    expect(again.status).toBe(200)
    for (const stream of [...streams, events(again), events(bob)]) await stream.cancel()
    expect(live.subscribers).toBe(0)
  })
})

describe('MAX_STREAMS', () => {
  test('the process holds at most MAX_STREAMS live streams, whoever opens them; the next is 503 with Retry-After', async () => {
    await world.close()
    live = new CountingLive()
    world = await openWorld(undefined, { live, config: loadConfig({ MAX_STREAMS: '3' }) })
    const link = await share([ids.truck1])
    const first = [keys.alice, keys.bob, link.token]
    const streams = []
    for (const token of first) {
      const res = await world.call('GET', '/devices/stream', { token })
      expect(res.status).toBe(200)
      streams.push(events(res))
    }
    for (const token of [keys.carol, keys.alice, link.token]) {
      const refused = await world.call('GET', '/devices/stream', { token })
      expect(refused.headers.get('retry-after')).toBe('15')
      expect((await problem(refused, 503)).detail).toContain('3')
    }
    await streams.pop()!.cancel()
    const carol = await world.call('GET', '/devices/stream', { token: keys.carol })
    expect(carol.status).toBe(200)
    for (const stream of [...streams, events(carol)]) await stream.cancel()
    expect(live.subscribers).toBe(0)
  })
})
