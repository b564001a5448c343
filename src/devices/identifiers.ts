/**
 * The shapes of a device's identifiers, one rule for the API, the command line and `import`
 * (same test, same words): an identifier that cannot be stored by one cannot by the others.
 */
import type { FieldError } from '../errors'

/** what the tracker sends as its IMEI: 15 digits; a terminal id need not pass the Luhn check digit */
export const IMEI = /^[0-9]{15}$/
/** another identifier (OsmAnd's `id`): printable ASCII, no spaces */
export const SERIAL = /^[\x21-\x7e]{1,64}$/
export const ICCID = /^[0-9A-Za-z]{0,32}$/

/** What is wrong with the identifiers given (absent and "" are "none", always fine), paths relative to the device: `/imei`. */
export function identifierProblems(input: { imei?: string; serial?: string; iccid?: string }): FieldError[] {
  const errors: FieldError[] = []
  if (input.imei && !IMEI.test(input.imei)) errors.push({ path: '/imei', message: 'must be 15 digits (or "" for none)' })
  if (input.serial && !SERIAL.test(input.serial)) errors.push({ path: '/serial', message: 'must be 1 to 64 printable ASCII characters, no spaces (or "" for none)' })
  if (input.iccid && !ICCID.test(input.iccid)) errors.push({ path: '/iccid', message: 'must be up to 32 letters and digits (or "" for none)' })
  return errors
}
