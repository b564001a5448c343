/** Times, ages and numbers as the console shows them (words from strings.ts). */
import { strings } from './strings'

/** "3 min ago" for a Unix time in seconds, against `nowMs` */
export function ago(seconds: number, nowMs: number): string {
  const s = Math.max(0, Math.round(nowMs / 1000 - seconds))
  if (s < 60) return strings.justNow
  if (s < 3600) return strings.minutesAgo(Math.floor(s / 60))
  if (s < 86_400) return strings.hoursAgo(Math.floor(s / 3600))
  return strings.daysAgo(Math.floor(s / 86_400))
}

/** today: the time; another day: the date and time */
export function when(ms: number, nowMs: number): string {
  const date = new Date(ms)
  const today = date.toDateString() === new Date(nowMs).toDateString()
  return today
    ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' })
    : date.toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' })
}

export const iso = (seconds: number) => new Date(seconds * 1000).toISOString()

export const coordinates = (latitude: number, longitude: number) => `${latitude.toFixed(5)}, ${longitude.toFixed(5)}`

/** 0–359 → N, NE, … */
export function compass(degrees: number): string {
  const points = ['N', 'NE', 'E', 'SE', 'S', 'SW', 'W', 'NW']
  return points[Math.round((((degrees % 360) + 360) % 360) / 45) % 8]
}

/** a finite number, or 1/0 and true/false as booleans where `flag`; anything else (never sent, garbled) is null */
const numberIn = (attributes: Record<string, unknown>, key: string): number | null => {
  const value = attributes[key]
  return typeof value === 'number' && Number.isFinite(value) ? value : null
}
const flagIn = (attributes: Record<string, unknown>, key: string): boolean | null => {
  const value = attributes[key]
  return value === true || value === 1 ? true : value === false || value === 0 ? false : null
}
const decimal = (value: number, digits: number) => value.toLocaleString([], { maximumFractionDigits: digits })

/**
 * The status attributes the device panel shows, in the units the device gave them (battery as a
 * percentage, a voltage or a GT06 level of 6; odometer metres as km): only those it sent.
 */
export function statusFacts(attributes: Record<string, unknown>): { key: string; label: string; value: string }[] {
  const facts: { key: string; label: string; value: string }[] = []
  const battery: string[] = []
  const level = numberIn(attributes, 'battery_level')
  const voltage = numberIn(attributes, 'battery_voltage')
  const gt06Level = numberIn(attributes, 'voltage_level')
  if (level !== null) battery.push(`${decimal(level, 0)} %`)
  if (voltage !== null) battery.push(`${decimal(voltage, 2)} V`)
  if (level === null && voltage === null && gt06Level !== null) battery.push(strings.batteryLevelOf6(gt06Level))
  if (battery.length > 0 && flagIn(attributes, 'charging') === true) battery.push(strings.charging)
  if (battery.length > 0) facts.push({ key: 'battery', label: strings.fieldBattery, value: battery.join(' · ') })
  const ignition = flagIn(attributes, 'ignition')
  if (ignition !== null) facts.push({ key: 'ignition', label: strings.fieldIgnition, value: ignition ? strings.on : strings.off })
  const power: string[] = []
  const external = flagIn(attributes, 'external_power')
  const externalVoltage = numberIn(attributes, 'external_voltage')
  if (external !== null) power.push(external ? strings.powerConnected : strings.powerCut)
  if (externalVoltage !== null) power.push(`${decimal(externalVoltage, 2)} V`)
  if (power.length > 0) facts.push({ key: 'power', label: strings.fieldExternalPower, value: power.join(' · ') })
  const gsm = numberIn(attributes, 'gsm_signal')
  if (gsm !== null) facts.push({ key: 'gsm', label: strings.fieldGsmSignal, value: decimal(gsm, 0) })
  const odometerM = numberIn(attributes, 'odometer')
  if (odometerM !== null) facts.push({ key: 'odometer', label: strings.fieldOdometer, value: `${decimal(odometerM / 1000, 1)} km` })
  return facts
}
