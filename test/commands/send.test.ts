/**
 * POST /devices/{id}/commands/{commandId} and the sent-command routes, through createApp(...).handle:
 * who may send, what the form's values must be, what is stored and shown (passwords never).
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { ids, keys, problem } from '../support/world'
import { commandIds, openCommandWorld, type EngineCommandWorld } from './support'

let world: EngineCommandWorld
beforeEach(async () => {
  world = await openCommandWorld()
})
afterEach(() => world.close())

const send = (device: string, command: string, body?: unknown, token: string = keys.alice) =>
  world.call('POST', `/devices/${device}/commands/${command}`, { token, body })
const sentList = async (device: string, token: string = keys.alice, query = '') => {
  const res = await world.call('GET', `/devices/${device}/commands/sent${query}`, { token })
  expect(res.status).toBe(200)
  return (await res.json()) as Record<string, unknown>[]
}

describe('POST /devices/{id}/commands/{commandId}', () => {
  test('a button: 202 with the sent command, stored and listed; Location names it', async () => {
    const res = await send(ids.truck1, ids.engineStop, {})
    expect(res.status).toBe(202)
    const sent = (await res.json()) as Record<string, unknown>
    const now = new Date(world.clock.now()).toISOString()
    expect(sent).toEqual({
      id: expect.any(String),
      command: ids.engineStop,
      name: 'Engine stop',
      text: 'RELAY,1#',
      status: 'queued',
      created_at: now,
      sent_at: null,
      answered_at: null,
      expires_at: new Date(world.clock.now() + 86_400_000).toISOString(),
      response: null,
      user: ids.alice,
    })
    expect(res.headers.get('location')).toBe(`/devices/${ids.truck1}/commands/sent/${sent.id}`)
    expect(await sentList(ids.truck1)).toEqual([sent])
    const one = await world.call('GET', `/devices/${ids.truck1}/commands/sent/${sent.id}`, { token: keys.alice })
    expect(await one.json()).toEqual(sent)
  })

  test('a button takes no body at all as {}', async () => {
    const res = await world.call('POST', `/devices/${ids.truck1}/commands/${ids.engineStop}`, { token: keys.alice })
    expect(res.status).toBe(202)
  })

  test('a form: each {field} replaced by its value; a number field takes a JSON number', async () => {
    const apn = await send(ids.truck1, ids.setApn, { apn: 'internet.example', password: '' })
    expect(apn.status).toBe(202)
    expect(((await apn.json()) as { text: string }).text).toBe('APN,internet.example,,***#')
    const interval = await send(ids.truck1, commandIds.setInterval, { seconds: 30 })
    expect(interval.status).toBe(202)
    expect(((await interval.json()) as { text: string }).text).toBe('TIMER,30#')
  })

  test('an account admin reaches every device of the account; a member the devices of their groups', async () => {
    expect((await send(ids.truck1, ids.engineStop, {}, keys.dana)).status).toBe(202)
    expect((await send(ids.truck2, ids.engineStop, {}, keys.bob)).status).toBe(202)
    const list = await sentList(ids.truck1, keys.dana)
    expect(list.map((s) => s.user)).toEqual([ids.dana])
  })

  test.each([
    ['a missing field', { apn: 'internet' }, ['/password'], 'is required'],
    ['a field the form does not have', { apn: 'internet', password: 'x', pin: '1234' }, ['/pin'], 'is not a field'],
    ['a control character', { apn: 'inter\nnet', password: 'x' }, ['/apn'], 'control characters'],
    ['a DEL character', { apn: 'internet', password: 'x\u007f' }, ['/password'], 'control characters'],
    ['129 characters', { apn: 'a'.repeat(129), password: 'x' }, ['/apn'], 'at most 128 characters'],
    ['a number where a string is asked', { apn: 12, password: 'x' }, ['/apn'], 'must be a string'],
    ['everything wrong at once', { apn: null, zone: 'x' }, ['/apn', '/password', '/zone'], ''],
  ])('400 naming the field: %s; nothing is stored', async (_, body, paths, message) => {
    const bad = await problem(await send(ids.truck1, ids.setApn, body), 400)
    expect(bad.errors!.map((e) => e.path)).toEqual(paths)
    expect(bad.errors![0]!.message).toContain(message)
    expect(await sentList(ids.truck1)).toEqual([])
  })

  test('128 characters and characters beyond ASCII are accepted', async () => {
    const res = await send(ids.truck1, ids.setApn, { apn: 'é'.repeat(128), password: 'x' })
    expect(res.status).toBe(202)
  })

  test('a value is never quoted back in an error (it may be a password)', async () => {
    const bad = await problem(await send(ids.truck1, ids.setApn, { apn: 'internet', password: `hunter2\u0007` }), 400)
    expect(JSON.stringify(bad)).not.toContain('hunter2')
  })

  test('a number field: a string, or a number given as text, is 400', async () => {
    for (const seconds of ['30', 'soon', null, true]) {
      const bad = await problem(await send(ids.truck1, commandIds.setInterval, { seconds }), 400)
      expect(bad.errors).toEqual([{ path: '/seconds', message: 'must be a number' }])
    }
  })

  test('a button given a value, or a body that is not an object, is 400', async () => {
    const extra = await problem(await send(ids.truck1, ids.engineStop, { force: 'yes' }), 400)
    expect(extra.errors!.map((e) => e.path)).toEqual(['/force'])
    await problem(await send(ids.truck1, ids.engineStop, ['RELAY,0#']), 400)
    await problem(await send(ids.truck1, ids.engineStop, '"RELAY,0#"'), 400)
    expect(await sentList(ids.truck1)).toEqual([])
  })

  test('a share token is 403; no credentials 401', async () => {
    const link = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices: [ids.truck1], ttl: 3600 } })
    const token = ((await link.json()) as { token: string }).token
    await problem(await send(ids.truck1, ids.engineStop, {}, token), 403)
    await problem(await world.call('GET', `/devices/${ids.truck1}/commands/sent`, { token }), 403)
    await problem(await world.call('POST', `/devices/${ids.truck1}/commands/${ids.engineStop}`, { body: {} }), 401)
    await problem(await world.call('GET', `/devices/${ids.truck1}/commands/sent`), 401)
  })

  test('a device out of reach is 404: another group, another account (its admin too), none at all', async () => {
    await problem(await send(ids.truck1, ids.engineStop, {}, keys.bob), 404)
    await problem(await send(ids.truck1, ids.engineStop, {}, keys.erin), 404)
    await problem(await send(ids.truck1, ids.engineStop, {}, keys.carol), 404)
    await problem(await send('0f000000-0000-4000-8000-0000000000ff', ids.engineStop, {}), 404)
    await problem(await world.call('GET', `/devices/${ids.truck1}/commands/sent`, { token: keys.bob }), 404)
    await problem(await world.call('GET', `/devices/${ids.truck1}/commands/sent`, { token: keys.erin }), 404)
    expect(await sentList(ids.truck1)).toEqual([])
  })

  test('a command that is not of the device\'s model is 404; a malformed id 400', async () => {
    await problem(await send(ids.truck1, commandIds.locate, {}), 404)
    await problem(await send(ids.truck1, '0e000000-0000-4000-8000-0000000000ff', {}), 404)
    await problem(await send(ids.truck1, 'not-a-uuid', {}), 400)
  })

  test('409: a command without send, and a device whose model speaks OsmAnd', async () => {
    const noSend = await problem(await send(ids.truck1, commandIds.reboot, {}), 409)
    expect(noSend.detail).toContain('cannot be sent')
    const osmand = await problem(await send(ids.van1, commandIds.locate, {}), 409)
    expect(osmand.detail).toContain('osmand')
    expect(await sentList(ids.truck1)).toEqual([])
    expect(await sentList(ids.van1)).toEqual([])
  })
})

describe('the sent commands', () => {
  test('newest first, paged with limit and offset; a sent command of another device is 404', async () => {
    const made: string[] = []
    for (let i = 0; i < 3; i++) {
      world.clock.advance(1000)
      made.push(((await (await send(ids.truck1, ids.engineStop, {})).json()) as { id: string }).id)
    }
    expect((await sentList(ids.truck1)).map((s) => s.id)).toEqual(made.toReversed())
    expect((await sentList(ids.truck1, keys.alice, '?limit=1&offset=1')).map((s) => s.id)).toEqual([made[1]])
    expect(await sentList(ids.truck1, keys.alice, '?offset=3')).toEqual([])
    await problem(await world.call('GET', `/devices/${ids.truck1}/commands/sent?limit=0`, { token: keys.alice }), 400)
    await problem(await world.call('GET', `/devices/${ids.truck2}/commands/sent/${made[0]}`, { token: keys.alice }), 404)
    await problem(await world.call('GET', `/devices/${ids.truck1}/commands/sent/${made[0]}`, { token: keys.bob }), 404)
  })

  test('DELETE cancels a queued command (204); then, or once sent, it is 409; unknown 404', async () => {
    const a = ((await (await send(ids.truck1, ids.engineStop, {})).json()) as { id: string }).id
    const b = ((await (await send(ids.truck1, ids.engineStop, {})).json()) as { id: string }).id
    const cancel = (id: string, token: string = keys.alice) => world.call('DELETE', `/devices/${ids.truck1}/commands/sent/${id}`, { token })
    await problem(await cancel(b, keys.bob), 404)
    const res = await cancel(b)
    expect(res.status).toBe(204)
    expect(await res.text()).toBe('')
    await problem(await cancel(b), 409)
    await problem(await cancel('0e000000-0000-4000-8000-0000000000ff'), 404)
    // the first one goes out; it can no longer be cancelled
    const key = await world.deviceKey(ids.truck1)
    const next = await world.queue.nextToSend(key, world.clock.now())
    expect(next?.id).toBe(a)
    expect(await world.queue.markSent(a, world.clock.now())).toBe(true)
    const sentProblem = await problem(await cancel(a), 409)
    expect(sentProblem.detail).toContain('sent')
    expect((await sentList(ids.truck1)).map((s) => [s.id, s.status])).toEqual([
      [b, 'cancelled'],
      [a, 'sent'],
    ])
    // a cancelled command is never handed out
    world.clock.advance(61_000)
    expect(await world.queue.nextToSend(key, world.clock.now())).toBeNull()
  })
})
