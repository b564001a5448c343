/**
 * What every protocol decoder produces: protocol-neutral fixes and events, units already
 * converted (speed km/h, course degrees, altitude metres, time Unix seconds).
 * The pipeline takes these from any listener; nothing downstream knows the wire format.
 */

export interface DecodedFix {
  timestamp: number
  latitude: number
  longitude: number
  /** km/h; null when the device did not report one */
  speed: number | null
  course: number | null
  altitude: number | null
  satellites: number | null
  /** false when the device itself says the fix is not valid (no GPS lock, 0 satellites) */
  valid: boolean
  /** everything else the device sent, under documented names (ignition, odometer, battery, …) */
  attributes: Record<string, unknown>
}

export interface DecodedEvent {
  timestamp: number
  /** a documented alarm code: sos, power_cut, vibration, overspeed, low_battery, … */
  alarmCode: string
  latitude: number | null
  longitude: number | null
  speed: number | null
  satellites: number | null
  mcc: number | null
  mnc: number | null
  dbm: number | null
  context: Record<string, unknown>
}

/** One message from one device: who it says it is, and what it reported. */
export interface DecodedReport {
  /** IMEI or serial exactly as the device sent it */
  uniqueId: string
  fixes: DecodedFix[]
  events: DecodedEvent[]
  /**
   * What the message said about the device itself rather than a fix (status and information
   * packets: battery, external power, signal, ignition, ICCID, …), under the attribute names the
   * fixes use: merged into the device's latest status. Absent or empty: nothing to keep.
   */
  status?: Record<string, unknown>
}
