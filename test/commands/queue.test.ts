/**
 * The command queue through its delivery interface (what the protocol units call), with the
 * world's clock, and what the API shows of it: order, one at a time, the 60 s answer wait, expiry,
 * re-send after a reconnection, failure, events, the live stream, restarts, and passwords never shown.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { ANSWER_WAIT_MS } from '../../src/commands/queue'
import { loadConfig } from '../../src/config'
import { ids, keys } from '../support/world'
import { openCommandWorld, type EngineCommandWorld } from './support'
import { sseBlocks } from '../support/sse'

let world: EngineCommandWorld
let truck1: number
beforeEach(async () => {
  world = await openCommandWorld()
  truck1 = await world.deviceKey(ids.truck1)
})
afterEach(() => world.close())

const PASSWORD = 'hunter2-Secret'
const now = () => world.clock.now()

async function send(command: string, body: unknown = {}, device = ids.truck1): Promise<{ id: string; text: string }> {
  const res = await world.call('POST', `/devices/${device}/commands/${command}`, { token: keys.alice, body })
  expect(res.status).toBe(202)
  return (await res.json()) as { id: string; text: string }
}
async function shown(id: string, device = ids.truck1): Promise<Record<string, unknown>> {
  const res = await world.call('GET', `/devices/${device}/commands/sent/${id}`, { token: keys.alice })
  expect(res.status).toBe(200)
  return (await res.json()) as Record<string, unknown>
}
async function events(device = ids.truck1): Promise<{ alarm_code: string; context: Record<string, unknown>; timestamp: number }[]> {
  const to = Math.floor(now() / 1000)
  const res = await world.call('GET', `/devices/${device}/events?from=${to - 86_400 * 2}&to=${to}`, { token: keys.alice })
  expect(res.status).toBe(200)
  return (await res.json()) as { alarm_code: string; context: Record<string, unknown>; timestamp: number }[]
}
/** hands out the next command and marks it sent, as a protocol unit does */
async function deliver(deviceKey = truck1) {
  const next = await world.queue.nextToSend(deviceKey, now())
  if (next) expect(await world.queue.markSent(next.id, now())).toBe(true)
  return next
}

describe('delivery', () => {
  test('in the order they were made, one at a time: the next once the previous is answered', async () => {
    const a = await send(ids.engineStop)
    const b = await send(ids.setApn, { apn: 'internet', password: 'pw' })
    const c = await send(ids.engineStop)
    const first = await world.queue.nextToSend(truck1, now())
    expect(first).toEqual({ id: a.id, deviceKey: truck1, text: 'RELAY,1#', attempt: 1 })
    // handed out once: a second delivery racing on the same device gets nothing until it is marked sent
    expect(await world.queue.nextToSend(truck1, now())).toBeNull()
    world.clock.advance(1500)
    expect(await world.queue.markSent(a.id, now())).toBe(true)
    expect(await shown(a.id)).toMatchObject({ status: 'sent', sent_at: new Date(now()).toISOString() })
    // the first waits for its answer
    world.clock.advance(ANSWER_WAIT_MS - 1)
    expect(await world.queue.nextToSend(truck1, now())).toBeNull()
    const answered = await world.queue.markAnswered(truck1, 'Cut off the fuel supply: Success!', now())
    expect(answered).toMatchObject({ id: a.id, status: 'answered', response: 'Cut off the fuel supply: Success!' })
    expect(await shown(a.id)).toMatchObject({ status: 'answered', answered_at: new Date(now()).toISOString(), response: 'Cut off the fuel supply: Success!' })
    expect((await deliver())?.id).toBe(b.id)
    expect(await world.queue.markAnswered(truck1, 'OK', now())).toMatchObject({ id: b.id })
    expect((await deliver())?.id).toBe(c.id)
    const statuses = ((await (await world.call('GET', `/devices/${ids.truck1}/commands/sent`, { token: keys.alice })).json()) as { status: string }[]).map((s) => s.status)
    expect(statuses).toEqual(['sent', 'answered', 'answered'])
  })

  test('an unanswered command holds the next back 60 s, then the next goes; a late answer still completes the oldest sent', async () => {
    const a = await send(ids.engineStop)
    const b = await send(ids.engineStop)
    await deliver()
    world.clock.advance(ANSWER_WAIT_MS - 1)
    expect(await world.queue.nextToSend(truck1, now())).toBeNull()
    world.clock.advance(1)
    expect((await deliver())?.id).toBe(b.id)
    expect(await world.queue.markAnswered(truck1, 'late', now())).toMatchObject({ id: a.id, status: 'answered' })
    expect(await shown(b.id)).toMatchObject({ status: 'sent' })
  })

  test('each device has its own queue', async () => {
    const truck2 = await world.deviceKey(ids.truck2)
    await send(ids.engineStop)
    const other = await send(ids.engineStop, {}, ids.truck2)
    await deliver()
    expect((await world.queue.nextToSend(truck2, now()))?.id).toBe(other.id)
  })

  test('an answer with no command waiting is no one\'s; markAnswered can name the command', async () => {
    expect(await world.queue.markAnswered(truck1, 'hello', now())).toBeNull()
    const a = await send(ids.engineStop)
    await deliver()
    world.clock.advance(ANSWER_WAIT_MS)
    const b = await send(ids.engineStop)
    await deliver()
    expect(await world.queue.markAnswered(truck1, 'for b', now(), b.id)).toMatchObject({ id: b.id, response: 'for b' })
    expect(await shown(a.id)).toMatchObject({ status: 'sent' })
    // another device's command is not this device's answer
    expect(await world.queue.markAnswered(await world.deviceKey(ids.truck2), 'x', now(), a.id)).toBeNull()
  })

  test('the delivery side is told at once when a command is queued, and when an answer lets the next go', async () => {
    const told: number[] = []
    world.queue.onReady((key) => told.push(key))
    await send(ids.engineStop)
    expect(told).toEqual([truck1])
    await deliver()
    await world.queue.markAnswered(truck1, 'ok', now())
    expect(told).toEqual([truck1, truck1])
  })

  test('the sweep tells of a device whose answer wait has ended, so its next command goes', async () => {
    await send(ids.engineStop)
    await send(ids.engineStop)
    await deliver()
    const told: number[] = []
    world.queue.onReady((key) => told.push(key))
    await world.queue.sweep(now())
    expect(told).toEqual([])
    world.clock.advance(ANSWER_WAIT_MS)
    await world.queue.sweep(now())
    expect(told).toEqual([truck1])
    // told once, not at every sweep
    world.clock.advance(5000)
    await world.queue.sweep(now())
    expect(told).toEqual([truck1])
  })
})

describe('expiry, cancel, failure', () => {
  test('a command not sent within COMMAND_TTL expires: the sweep says so, with an event in the events API', async () => {
    const a = await send(ids.engineStop)
    world.clock.advance(86_400_000 - 1)
    expect(await world.queue.sweep(now())).toEqual({ expired: 0, failed: 0 })
    world.clock.advance(1)
    expect(await world.queue.sweep(now())).toEqual({ expired: 1, failed: 0 })
    expect(await shown(a.id)).toMatchObject({ status: 'expired' })
    expect(await events()).toEqual([expect.objectContaining({ alarm_code: 'command_expired', context: { id: a.id, command: ids.engineStop, name: 'Engine stop' }, timestamp: Math.floor(now() / 1000) })])
    expect(await world.queue.nextToSend(truck1, now())).toBeNull()
  })

  test('a device logging in after the expiry gets nothing, and the command expires then even before a sweep', async () => {
    const a = await send(ids.engineStop)
    const b = await send(ids.engineStop)
    world.clock.advance(86_400_000)
    expect(await world.queue.nextToSend(truck1, now())).toBeNull()
    expect([(await shown(a.id)).status, (await shown(b.id)).status]).toEqual(['expired', 'expired'])
    // two in the same second: two events, both at that second
    const second = Math.floor(now() / 1000)
    expect((await events()).map((e) => [e.alarm_code, e.context.id, e.timestamp]).toSorted()).toEqual([
      ['command_expired', a.id, second],
      ['command_expired', b.id, second],
    ].toSorted())
  })

  test('a sweep long after the expiry (a server that was down) files the event at the expiry', async () => {
    const a = await send(ids.engineStop)
    const expiry = now() + 86_400_000
    world.clock.set(expiry + 3 * 3600_000)
    await world.queue.sweep(now())
    expect((await events()).map((e) => [e.context.id, e.timestamp])).toEqual([[a.id, Math.floor(expiry / 1000)]])
  })

  test('COMMAND_TTL sets the expiry; a bad value stops the start naming it', async () => {
    await world.close()
    world = await openCommandWorld({ COMMAND_TTL: '120' })
    const a = await send(ids.engineStop)
    expect((await shown(a.id)).expires_at).toBe(new Date(now() + 120_000).toISOString())
    for (const bad of ['0', '-5', '1.5', 'a day']) expect(() => loadConfig({ COMMAND_TTL: bad })).toThrow(/COMMAND_TTL/)
  })

  test('a reconnection while a command waits for its answer sends it again once; a second miss is failed', async () => {
    const a = await send(ids.engineStop)
    const b = await send(ids.engineStop)
    await deliver()
    world.clock.advance(10_000)
    await world.queue.onReconnect(truck1, now())
    const again = await world.queue.nextToSend(truck1, now())
    expect(again).toEqual({ id: a.id, deviceKey: truck1, text: 'RELAY,1#', attempt: 2 })
    expect(await world.queue.markSent(a.id, now())).toBe(true)
    expect(await shown(a.id)).toMatchObject({ status: 'sent', sent_at: new Date(now()).toISOString() })
    // another reconnection before an answer: failed, and the next one goes
    world.clock.advance(10_000)
    await world.queue.onReconnect(truck1, now())
    expect(await shown(a.id)).toMatchObject({ status: 'failed' })
    expect((await events()).map((e) => [e.alarm_code, e.context.id])).toEqual([['command_failed', a.id]])
    expect((await deliver())?.id).toBe(b.id)
    // an answer now completes b, not the failed a
    expect(await world.queue.markAnswered(truck1, 'done', now())).toMatchObject({ id: b.id })
  })

  test('a command the protocol cannot carry fails at once, and the next goes', async () => {
    const a = await send(ids.engineStop)
    const b = await send(ids.engineStop)
    const next = await world.queue.nextToSend(truck1, now())
    expect(await world.queue.markFailed(next!.id, now())).toBe(true)
    expect(await shown(a.id)).toMatchObject({ status: 'failed' })
    expect((await events()).map((e) => [e.alarm_code, e.context.id])).toEqual([['command_failed', a.id]])
    expect((await deliver())?.id).toBe(b.id)
    expect(await world.queue.markFailed(a.id, now())).toBe(false)
  })

  test('reconnecting before the re-send went out is not a second miss', async () => {
    const a = await send(ids.engineStop)
    await deliver()
    await world.queue.onReconnect(truck1, now())
    await world.queue.onReconnect(truck1, now())
    expect(await shown(a.id)).toMatchObject({ status: 'sent' })
    expect((await deliver())?.attempt).toBe(2)
  })

  test('a sent command still unanswered at its expiry fails; a queued one a cancel removes is never sent', async () => {
    const a = await send(ids.engineStop)
    const b = await send(ids.engineStop)
    await deliver()
    // b is handed out, then cancelled before it is marked sent: it must not go
    world.clock.advance(ANSWER_WAIT_MS)
    const next = await world.queue.nextToSend(truck1, now())
    expect(next?.id).toBe(b.id)
    expect((await world.call('DELETE', `/devices/${ids.truck1}/commands/sent/${b.id}`, { token: keys.alice })).status).toBe(204)
    expect(await world.queue.markSent(b.id, now())).toBe(false)
    world.clock.advance(86_400_000)
    expect(await world.queue.sweep(now())).toEqual({ expired: 0, failed: 1 })
    expect(await shown(a.id)).toMatchObject({ status: 'failed' })
    expect(await shown(b.id)).toMatchObject({ status: 'cancelled' })
  })
})

describe('events on the live stream', () => {
  test('an answer is `event: alarm` command_answered on an open stream', async () => {
    const res = await world.call('GET', '/devices/stream', { token: keys.alice })
    expect(res.status).toBe(200)
    const stream = sseBlocks(res)
    await stream.until((b) => b.includes('retry: 3000'))
    const sent = await send(ids.engineStop)
    await deliver()
    await world.queue.markAnswered(truck1, 'ok', now())
    const block = await stream.until((b) => b.includes('command_answered'))
    expect(block.split('\n')[0]).toBe('event: alarm')
    expect(JSON.parse(block.split('\n')[1]!.slice('data: '.length))).toEqual({
      id: ids.truck1,
      alarm_code: 'command_answered',
      timestamp: Math.floor(now() / 1000),
      latitude: null,
      longitude: null,
      speed: null,
      context: { id: sent.id, command: ids.engineStop, name: 'Engine stop' },
    })
    await stream.cancel()
  })
})

describe('passwords', () => {
  test('the device gets the real text; the list, one, the answer, events and logs show ***', async () => {
    const made = await send(ids.setApn, { apn: 'internet', password: PASSWORD })
    expect(made.text).toBe('APN,internet,,***#')
    const next = await world.queue.nextToSend(truck1, now())
    expect(next?.text).toBe(`APN,internet,,${PASSWORD}#`)
    await world.queue.markSent(next!.id, now())
    // a device that echoes its settings back
    const answered = await world.queue.markAnswered(truck1, `APN:internet,user:,password:${PASSWORD} OK`, now())
    expect(answered?.response).toBe('APN:internet,user:,password:*** OK')
    const list = await (await world.call('GET', `/devices/${ids.truck1}/commands/sent`, { token: keys.alice })).text()
    const one = await (await world.call('GET', `/devices/${ids.truck1}/commands/sent/${made.id}`, { token: keys.alice })).text()
    const fleetEvents = await (await world.call('GET', '/events', { token: keys.alice })).text()
    expect(fleetEvents).toContain('command_answered')
    for (const shownText of [list, one, fleetEvents, JSON.stringify(await events()), world.logLines.join('\n')]) {
      expect(shownText).not.toContain(PASSWORD)
    }
    expect(list).toContain('APN,internet,,***#')
    expect(world.logLines.some((line) => line.includes('command answered'))).toBe(true)
  })

  test('a password value typed in another field is masked there too', async () => {
    const made = await send(ids.setApn, { apn: PASSWORD, password: PASSWORD })
    expect(made.text).toBe('APN,***,,***#')
  })
})

describe('devices', () => {
  test('a device with sent commands can be deleted; its commands go with it', async () => {
    await send(ids.engineStop)
    await deliver()
    expect((await world.call('DELETE', `/devices/${ids.truck1}`, { token: keys.dana })).status).toBe(204)
    expect(await world.queue.nextToSend(truck1, now())).toBeNull()
    expect(await world.queue.markAnswered(truck1, 'late', now())).toBeNull()
  })
})

describe('restarts', () => {
  test('a queued command survives a restart on the same database file, real text and all', async () => {
    const a = await send(ids.setApn, { apn: 'internet', password: PASSWORD })
    world = await world.restart()
    expect(await shown(a.id)).toMatchObject({ status: 'queued', text: 'APN,internet,,***#' })
    const next = await world.queue.nextToSend(truck1, now())
    expect(next).toEqual({ id: a.id, deviceKey: truck1, text: `APN,internet,,${PASSWORD}#`, attempt: 1 })
  })

  test('a command sent before a restart is sent again when the device logs in after it', async () => {
    const a = await send(ids.engineStop)
    await deliver()
    world = await world.restart()
    await world.queue.onReconnect(truck1, now())
    expect(await world.queue.nextToSend(truck1, now())).toMatchObject({ id: a.id, attempt: 2 })
  })
})
