/**
 * A device's status: what a GT06 device's status (0x13) and information (0x94) packets say of it,
 * sent on a real TCP socket, kept as its latest attributes, read at GET /devices/{id}/status
 * (through createApp(...).handle, reached as the device is) and told to open live streams as
 * `event: status` once stored.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { LivePositions } from '../../src/ingest/live'
import { createIngestPipeline, type IngestPipeline } from '../../src/ingest/pipeline'
import { gt06 } from '../../src/ingest/protocols/gt06/descriptor'
import { startTcpListener, type TcpListener } from '../../src/ingest/tcp'
import { silentLogger } from '../../src/log'
import { PERMISSION } from '../../src/share/permissions'
import { ids, keys, openWorld, problem, type EngineWorld } from '../support/world'
import { connectClient, gt06Login, gt06Status, hex } from './frames'
import { hex as fromHex } from './protocols/helpers'
import { TRACCAR_INFO_ICCID } from './protocols/gt06/captures'

const TRUCK1_IMEI = '359710049095001'

let world: EngineWorld
let live: LivePositions
let pipeline: IngestPipeline
let listener: TcpListener

beforeEach(async () => {
  live = new LivePositions()
  world = await openWorld(undefined, { live })
  pipeline = createIngestPipeline({ stores: world.stores, clock: world.clock, log: silentLogger, live, offlineAfterSeconds: 600, sweepIntervalMs: 0 })
  listener = startTcpListener(gt06, { pipeline, clock: world.clock, log: silentLogger, port: 0, hostname: '127.0.0.1' })
})
afterEach(async () => {
  await listener.stop()
  await pipeline.stop()
  await world.close()
})

const status = (id: string, token?: string) => world.call('GET', `/devices/${id}/status`, { token })

/** Truck 1 logs in and sends a status packet (ignition on, GPS tracking, voltage level 4, GSM level 3), acknowledged after its commit. */
async function truckReportsStatus() {
  const client = await connectClient(listener.port)
  client.send(gt06Login(TRUCK1_IMEI, 1))
  await client.read(10)
  client.send(gt06Status(2))
  expect(hex(await client.read(10))).toStartWith('78 78 05 13 00 02')
  return client
}

async function share(devices: string[], acl?: string[]): Promise<string> {
  const res = await world.call('POST', '/devices/share', { token: keys.alice, body: { devices, ttl: 3600, ...(acl ? { acl } : {}) } })
  expect(res.status).toBe(200)
  return ((await res.json()) as { token: string }).token
}

describe('GET /devices/{id}/status', () => {
  test('a device that has said nothing: no attributes, updated_at null', async () => {
    const res = await status(ids.truck1, keys.alice)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ id: ids.truck1, attributes: {}, updated_at: null, address: 'Paris, FR' })
  })

  test('address: the place of the device\'s location, null for a device without one', async () => {
    const placed = (await (await status(ids.truck2, keys.alice)).json()) as Record<string, unknown>
    expect(placed).toHaveProperty('address', 'Lyon, FR')
    const nowhere = (await (await status(ids.van1, keys.alice)).json()) as Record<string, unknown>
    expect(nowhere).toHaveProperty('address', null)
  })

  test('a status packet, then an information packet: their attributes merged, the later packet adding to the first', async () => {
    const client = await truckReportsStatus()
    const first = (await (await status(ids.truck1, keys.alice)).json()) as { attributes: Record<string, unknown>; updated_at: string }
    expect(first.attributes).toEqual({
      ignition: true,
      charging: false,
      external_power: false,
      immobilized: false,
      armed: false,
      gps_tracking: true,
      voltage_level: 4,
      gsm_signal: 3,
    })
    expect(first.updated_at).toBe(new Date(world.clock.now()).toISOString())

    // 0x94 ICCID (a real capture; no ACK is due): kept beside what the status packet said
    world.clock.advance(60_000)
    client.send(fromHex(TRACCAR_INFO_ICCID))
    let body: { attributes: Record<string, unknown>; updated_at: string } = first
    for (let tries = 0; tries < 200 && body.attributes.iccid === undefined; tries++) {
      await Bun.sleep(5)
      body = (await (await status(ids.truck1, keys.alice)).json()) as typeof body
    }
    expect(body.attributes).toMatchObject({ iccid: '8966051912408052452', imsi: '520050218721401', ignition: true, voltage_level: 4 })
    expect(body.updated_at).toBe(new Date(world.clock.now()).toISOString())
    client.end()
  })

  test('reached as the device is: a member of its group, the account admin, a share link with location; 404 otherwise', async () => {
    const client = await truckReportsStatus()
    expect((await status(ids.truck1, keys.dana)).status).toBe(200) // acme's admin
    await problem(await status(ids.truck1, keys.bob), 404) // vans only: not his
    await problem(await status(ids.truck1, keys.carol), 404) // another account
    await problem(await status(ids.truck1, keys.erin), 404) // another account's admin
    await problem(await status(ids.truck1), 401)
    const located = await share([ids.truck1], [PERMISSION.location])
    expect(await (await status(ids.truck1, located)).json()).toMatchObject({ id: ids.truck1, attributes: { ignition: true } })
    await problem(await status(ids.truck1, await share([ids.truck1], [PERMISSION.history])), 403)
    await problem(await status(ids.truck2, located), 404) // not the link's device
    // every id answers as GET /devices/{id} does
    for (const id of [ids.truck1, ids.truck2, ids.van1, ids.unlinked, ids.globexCar]) {
      for (const token of [keys.alice, keys.bob, keys.carol, located]) {
        expect([id, token, (await status(id, token)).status]).toEqual([id, token, (await world.call('GET', `/devices/${id}`, { token })).status])
      }
    }
    const bad = await problem(await status('not-a-uuid', keys.alice), 400)
    expect(bad.errors?.[0]?.path).toBe('/id')
    client.end()
  })
})

describe('event: status on the live stream', () => {
  test('sent once stored, with what this packet said, to the streams that get the device\'s fixes', async () => {
    const open = async (token: string) => {
      const res = await world.call('GET', '/devices/stream', { token })
      expect(res.status).toBe(200)
      return res.body!.pipeThrough(new TextDecoderStream()).getReader()
    }
    const alice = await open(keys.alice)
    const bob = await open(keys.bob)
    const client = await truckReportsStatus()
    let text = ''
    while (!text.includes('event: status')) {
      const chunk = await alice.read()
      if (chunk.done) break
      text += chunk.value
    }
    const block = text.slice(text.indexOf('event: status')).split('\n\n')[0]
    const data = JSON.parse(block.split('\ndata: ')[1])
    expect(data).toEqual({
      id: ids.truck1,
      attributes: { ignition: true, charging: false, external_power: false, immobilized: false, armed: false, gps_tracking: true, voltage_level: 4, gsm_signal: 3 },
      updated_at: new Date(world.clock.now()).toISOString(),
    })
    // bob does not reach truck 1: his stream heard nothing of it (a fix of his van comes next)
    const van = await world.deviceKey(ids.truck2)
    live.publish({ deviceKey: van, timestamp: world.clock.now() / 1000, latitude: 1, longitude: 1, speed: 0, course: null })
    let bobText = ''
    while (!bobText.includes(ids.truck2) || !bobText.endsWith('\n\n')) {
      const chunk = await bob.read()
      if (chunk.done) break
      bobText += chunk.value
      if (bobText.includes(`"id":"${ids.truck2}","latitude":1`)) break
    }
    expect(bobText).not.toContain('event: status')
    await alice.cancel()
    await bob.cancel()
    client.end()
  })
})
