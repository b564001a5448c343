/**
 * What the server sends a Queclink @Track device unasked. The one answer its devices wait for is
 * the heartbeat's: `+ACK:GTHBD,<version>,<IMEI>,<name>,<send time>,<count>$` is answered
 * `+SACK:GTHBD,<version>,<count>$` (the @Track document's "Heartbeat" section); a device that gets
 * none reconnects. Reports are not acknowledged: `+SACK:<count>$` is wanted only by devices set
 * to wait for it (AT+GTSRI's SACK enable, off by default), and every byte sent costs the device's
 * owner mobile data.
 */

/** `+SACK:GTHBD,<version>,<count>$` as ASCII bytes. */
export function buildGl200HeartbeatAnswer(version: string, count: string): Uint8Array {
  return new TextEncoder().encode(`+SACK:GTHBD,${version},${count}$`)
}
