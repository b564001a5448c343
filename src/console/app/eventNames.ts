/**
 * Events in words, as every reader of them says them: the console's notices, Events and History
 * pages, and the email and Telegram messages (src/alerts/message.ts). Pure: only the strings,
 * no Preact, so the server can import it.
 */
import { strings } from './strings'

const finite = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value)

/**
 * An event in words: a derived event told from its context ("Entered Yard", "Overspeed 112 km/h
 * (limit 90)"), an `alarm` by the device's own code ("Alarm 0x1f"), else its alarm's name.
 */
export function eventName(code: string, context?: Record<string, unknown>): string {
  const name = typeof context?.name === 'string' && context.name !== '' ? context.name : null
  if (code === 'geofence_enter' && name) return strings.geofenceEntered(name)
  if (code === 'geofence_exit' && name) return strings.geofenceLeft(name)
  if (code === 'overspeed' && finite(context?.speed)) {
    const speed = Math.round(context.speed)
    return finite(context.limit) ? strings.overspeedOver(speed, Math.round(context.limit)) : strings.overspeedAt(speed)
  }
  if (code === 'alarm' && typeof context?.raw_alarm === 'string' && context.raw_alarm !== '') return strings.alarmRaw(context.raw_alarm)
  return alarmName(code)
}

/** The alarm's name in words: a known code's own, a GT06 alarm byte's number, else the code itself as words. */
export function alarmName(code: string): string {
  const known = strings.alarmNames[code]
  if (known) return known
  if (/^alarm_0x[0-9a-f]+$/i.test(code)) return strings.alarmByte(code.slice(6))
  return strings.alarmOther(code.replace(/[_-]+/g, ' ').trim() || code)
}
