/**
 * The notices' rules (src/console/app/notices.ts), pure: passing news the server derives fades
 * after FADE_AFTER_MS, a device's alarm stays until acknowledged and the acknowledgement is
 * remembered, the stack shows alarms first and newest first, at most STACKED, with a count of the
 * rest. The stack in a browser is tried in notices.browser.test.ts.
 */
import { describe, expect, test } from 'bun:test'
import { acknowledge, acknowledgeAll, arrive, emptyNotices, expire, FADE_AFTER_MS, kindOf, MAX_NOTICES, nextFadeMs, stack, STACKED, type NoticeState } from '../../src/console/app/notices'
import type { AlarmEvent } from '../../src/console/app/types'

const T0_MS = 1_764_000_000_000
const event = (alarm_code: string, timestamp: number, id = 'dev-1'): AlarmEvent => ({ id, alarm_code, timestamp, latitude: 48.85, longitude: 2.35, speed: 0 })
const codes = (state: NoticeState) => state.notices.map((n) => n.alarm.alarm_code)
const shownCodes = (state: NoticeState, limit?: number) => stack(state.notices, limit).shown.map((n) => `${n.alarm.alarm_code}@${n.alarm.timestamp}`)

describe('notices', () => {
  test('derived events (geofence, online/offline, command answered…) fade; device alarms (SOS, tamper, power cut, any other) stay', () => {
    for (const code of ['geofence_enter', 'geofence_exit', 'device_online', 'device_offline', 'command_answered', 'command_failed', 'command_expired', 'overspeed', 'ignition_on', 'ignition_off'])
      expect(kindOf(code)).toBe('passing')
    for (const code of ['sos', 'tamper', 'power_cut', 'alarm', 'low_battery', 'vibration', 'harsh_braking', 'some_new_code']) expect(kindOf(code)).toBe('alarm')
  })

  test(`a passing notice is gone ${FADE_AFTER_MS} ms after it came, an alarm is still there an hour later`, () => {
    let state = arrive(emptyNotices(), event('sos', 100), T0_MS)
    state = arrive(state, event('geofence_enter', 101), T0_MS + 1_000)
    expect(nextFadeMs(state)).toBe(T0_MS + 1_000 + FADE_AFTER_MS)
    expect(codes(expire(state, T0_MS + FADE_AFTER_MS))).toEqual(['geofence_enter', 'sos'])
    state = expire(state, T0_MS + 1_000 + FADE_AFTER_MS)
    expect(codes(state)).toEqual(['sos'])
    expect(nextFadeMs(state)).toBeNull()
    expect(codes(expire(state, T0_MS + 3_600_000))).toEqual(['sos'])
  })

  test('an acknowledged alarm is remembered: the same event (device, code, second) does not come back; another one does', () => {
    let state = arrive(emptyNotices(), event('sos', 100), T0_MS)
    const key = state.notices[0]!.key
    state = acknowledge(state, key)
    expect(codes(state)).toEqual([])
    expect(state.acknowledged).toEqual(['dev-1|sos|100'])
    expect(arrive(state, event('sos', 100), T0_MS + 5)).toBe(state)
    // the memory as the board keeps it over a reload
    expect(arrive(emptyNotices(state.acknowledged), event('sos', 100), T0_MS).notices).toEqual([])
    expect(codes(arrive(state, event('sos', 101), T0_MS))).toEqual(['sos'])
    expect(codes(arrive(state, event('sos', 100, 'dev-2'), T0_MS))).toEqual(['sos'])
    // the same event twice on the stack is one notice
    const once = arrive(emptyNotices(), event('tamper', 7), T0_MS)
    expect(arrive(once, event('tamper', 7), T0_MS)).toBe(once)
    // a dismissed passing notice is not remembered (it would have faded anyway)
    const passing = arrive(emptyNotices(), event('device_online', 9), T0_MS)
    expect(acknowledge(passing, passing.notices[0]!.key).acknowledged).toEqual([])
  })

  test(`the stack: alarms first, newest first, at most ${STACKED}, and how many more`, () => {
    let state = emptyNotices()
    state = arrive(state, event('sos', 1), T0_MS)
    state = arrive(state, event('geofence_enter', 2), T0_MS)
    state = arrive(state, event('tamper', 3), T0_MS)
    state = arrive(state, event('device_offline', 4), T0_MS)
    state = arrive(state, event('power_cut', 5), T0_MS)
    state = arrive(state, event('command_answered', 6), T0_MS)
    expect(stack(state.notices)).toMatchObject({ more: 2 })
    expect(shownCodes(state)).toEqual(['power_cut@5', 'tamper@3', 'sos@1', 'command_answered@6'])
    expect(shownCodes(state, 2)).toEqual(['power_cut@5', 'tamper@3'])
    expect(stack(state.notices, 2).more).toBe(4)
    expect(shownCodes(state, 10)).toEqual(['power_cut@5', 'tamper@3', 'sos@1', 'command_answered@6', 'device_offline@4', 'geofence_enter@2'])
    expect(stack(state.notices, 10).more).toBe(0)
    const acknowledged = acknowledgeAll(state)
    expect(acknowledged.notices).toEqual([])
    expect(acknowledged.acknowledged.sort()).toEqual(['dev-1|power_cut|5', 'dev-1|sos|1', 'dev-1|tamper|3'])
  })

  test(`a full board lets the oldest passing news go before any alarm`, () => {
    let state = arrive(emptyNotices(), event('sos', 0), T0_MS)
    for (let i = 1; i < MAX_NOTICES; i++) state = arrive(state, event('device_online', i), T0_MS)
    state = arrive(state, event('tamper', MAX_NOTICES), T0_MS)
    expect(state.notices).toHaveLength(MAX_NOTICES)
    expect(state.notices.filter((n) => n.kind === 'alarm').map((n) => n.alarm.alarm_code)).toEqual(['tamper', 'sos'])
    expect(state.notices.some((n) => n.alarm.timestamp === 1)).toBe(false)
  })
})
