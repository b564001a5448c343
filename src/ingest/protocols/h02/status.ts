/**
 * The H02 status word ("vehicle_status"): 8 hex digits at the end of V1, V4, NBR and LINK frames
 * and 4 bytes of the binary form. Negative logic: a bit at 0 means its condition holds, so
 * FFFFFFFF is "nothing to report" and FFFFFBFF (bit 10 at 0) is "ignition off, nothing else".
 *
 * Source: the bit tables of three H02 manufacturer documents set side by side in
 * traccar/traccar issue #2920, "H02 vehicle status field" (2017-02-16). Bits counted from the
 * least significant bit of the word as written (bit 0 is the last hex digit's lowest bit).
 *
 *   bit  document 1                 document 2                     document 3
 *   0    illegal door open alarm    thief alarm                    thief alarm
 *   1    SOS                        rob alarm                      robbery alarm
 *   2    speed alarm                over speed alarm               overspeed
 *   4    entering alarm             in geo-fence alarm             entering alarm
 *   7    out alarm                  out geo-fence alarm            out alarm
 *   9    armed                      undefined                      vehicle fortification
 *   10   ACC off                    ACC OFF                        ACC off
 *   17   shock alarm                low battery alarm (1)          reserved (1)
 *   18   tilt alarm                 undefined (1)                  reserved (1)
 *   19   use backup battery         powered via built-in battery   terminal by backup battery
 *
 * Decisions, where the documents differ or say little:
 * - Alarms are raised only for bits that all three documents give the same meaning: 1 (the
 *   emergency button, SOS in document 1), 2, 4, 7 and 19 (on the backup battery: the external
 *   supply was cut). Bit 0 is the intrusion alarm in all three ("thief", "door open"); these
 *   units raise it from their vibration sensor while armed, so it is stored as `vibration`.
 * - Bit 17 is not used: shock, low battery or reserved depending on the document, and document 2
 *   even lists 1 as its value. Bit 18 is not used either: tilt in one document, reserved in the
 *   others, and captured frames carry it at 0 during ordinary driving (FFFBFFFF), so reading it
 *   as an alarm would raise one on every fix.
 * - The whole word is kept with every fix and status (`status_word`), so a bit decoded wrongly
 *   for some firmware can be read again later.
 * - A status bit is a state, not an event: a device repeats it in every frame while it holds.
 *   `newlyActiveAlarms` raises an alarm only when its bit turns on relative to the previous word
 *   of the same device (none known: every active bit counts as new).
 */

export interface H02AlarmBit {
  bit: number
  alarmCode: string
}

/** The status bits that raise an event, with the alarm code they raise. */
export const H02_ALARM_BITS: readonly H02AlarmBit[] = [
  { bit: 0, alarmCode: 'vibration' },
  { bit: 1, alarmCode: 'sos' },
  { bit: 2, alarmCode: 'overspeed' },
  { bit: 4, alarmCode: 'geofence_enter' },
  { bit: 7, alarmCode: 'geofence_exit' },
  { bit: 19, alarmCode: 'power_cut' },
]

const IGNITION_BIT = 10
const ARMED_BIT = 9
const BACKUP_BATTERY_BIT = 19

export interface H02Status {
  /** the word as a number (0 .. 0xFFFFFFFF) */
  value: number
  /** the word as 8 upper-case hex digits, as devices print it */
  hex: string
  /** bit 10 at 1: ACC (ignition) on */
  ignition: boolean
  /** bit 9 at 0: armed ("fortification") */
  armed: boolean
  /** bit 19 at 1: running on external power (at 0 the device runs on its backup battery) */
  externalPower: boolean
  /** alarm codes whose bit is active in this word, in bit order */
  alarms: string[]
}

function bitIsActive(word: number, bit: number): boolean {
  // negative logic: 0 is active. `>>>` keeps bit 31 positive.
  return ((word >>> bit) & 1) === 0
}

/** Parses 8 hex digits; null for anything else. */
export function parseH02StatusWord(text: string): number | null {
  if (!/^[0-9A-Fa-f]{8}$/.test(text)) return null
  return Number.parseInt(text, 16)
}

export function decodeH02Status(word: number): H02Status {
  return {
    value: word,
    hex: (word >>> 0).toString(16).toUpperCase().padStart(8, '0'),
    ignition: !bitIsActive(word, IGNITION_BIT),
    armed: bitIsActive(word, ARMED_BIT),
    externalPower: !bitIsActive(word, BACKUP_BATTERY_BIT),
    alarms: H02_ALARM_BITS.filter(({ bit }) => bitIsActive(word, bit)).map(({ alarmCode }) => alarmCode),
  }
}

/** Alarm bits active in `word` that were not active in `previous` (every active one when there is none). */
export function newlyActiveAlarms(word: number, previous: number | null): H02AlarmBit[] {
  return H02_ALARM_BITS.filter(({ bit }) => bitIsActive(word, bit) && (previous === null || !bitIsActive(previous, bit)))
}

/** The attributes a status word adds to a fix or a status report. */
export function h02StatusAttributes(status: H02Status): Record<string, unknown> {
  return {
    status_word: status.hex,
    ignition: status.ignition,
    armed: status.armed,
    external_power: status.externalPower,
  }
}
