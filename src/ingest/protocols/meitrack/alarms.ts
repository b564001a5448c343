/**
 * Meitrack event codes (the "Event Code" table of the Meitrack GPRS protocol documents: MVT/T1,
 * T333, T366, T622) that are alarms, as OUR codes (../events.ts). Every other code (35 by time
 * interval, 33 by distance, 34 a position asked for, 31 heartbeat, 2/3 inputs whose meaning
 * depends on the wiring, …) is a routine report and raises nothing; its code is kept on the fix
 * as `event`.
 */
const ALARMS: ReadonlyMap<number, string> = new Map([
  [1, 'sos'], // "SOS pressed" (input 1 on older models, wired to the SOS button)
  [17, 'low_battery'], // low (internal) battery
  [18, 'low_battery'], // low external battery: the vehicle's own; the raw code says which
  [19, 'overspeed'],
  [20, 'geofence_enter'],
  [21, 'geofence_exit'],
  [23, 'power_cut'], // external battery cut
  [24, 'gps_blind_spot_enter'], // GPS signal lost
  [25, 'gps_blind_spot_exit'], // GPS signal recovery
  [26, 'deep_sleep'], // enter sleep
  [36, 'towing'],
  [44, 'jamming'], // GSM jamming
  [78, 'collision'], // impact / accident
  [90, 'harsh_cornering'], // sharp turn left
  [91, 'harsh_cornering'], // sharp turn right
  [129, 'harsh_braking'],
  [130, 'harsh_acceleration'],
  // fatigue driving: no code of ours fits; stored as `alarm` with this raw code
  [135, 'fatigue_driving'],
])

/** The alarm a Meitrack event code raises, or null for a routine report. */
export function meitrackAlarm(eventCode: number): string | null {
  return ALARMS.get(eventCode) ?? null
}

/** Event 22 "external battery on" and 23 "external battery cut" say whether the vehicle powers the device. */
export function externalPowerOf(eventCode: number): boolean | null {
  return eventCode === 22 ? true : eventCode === 23 ? false : null
}

/** Event 34: the position the server asked for with A10. */
export const POSITION_ASKED_EVENT = 34
