/**
 * What the server may send an H02 device. The protocol defines no answer to a position (V1),
 * a cell report (NBR), a heartbeat (LINK) or a binary frame; the device sends them and goes on.
 * Some firmware (4G units among them) waits for a confirmation and resends or reconnects without
 * it; for those, the answer other servers send is `*<maker>,<id>,V4,<type>,<yyyyMMddHHmmss>#`
 * with the server's UTC time. It is built here and sent only when the listener asks for it
 * (`acknowledgeReports`), because every byte sent costs the device's owner mobile data and the
 * devices that do not expect it gain nothing.
 *
 * The maker is the one the device used: the H02 document's command structure says "the Vehicle
 * Tracker will check the Manufacturer name whether it's correct, if incorrect that will not be
 * the center command" (H02 protocol document, "The Command Structure from Center Sending", as
 * published on scribd.com, document 470158848).
 */

const DEFAULT_MAKER = 'HQ'

function twoDigits(value: number): string {
  return String(value).padStart(2, '0')
}

/** yyyyMMddHHmmss in UTC. */
export function h02ReplyTime(unixSeconds: number): string {
  const date = new Date(Math.floor(unixSeconds) * 1000)
  return (
    String(date.getUTCFullYear()).padStart(4, '0') +
    twoDigits(date.getUTCMonth() + 1) +
    twoDigits(date.getUTCDate()) +
    twoDigits(date.getUTCHours()) +
    twoDigits(date.getUTCMinutes()) +
    twoDigits(date.getUTCSeconds())
  )
}

/** `*<maker>,<id>,V4,<type>,<yyyyMMddHHmmss>#` as ASCII bytes. */
export function buildH02Confirmation(maker: string | null, id: string, type: string, unixSeconds: number): Uint8Array {
  return new TextEncoder().encode(`*${maker ?? DEFAULT_MAKER},${id},V4,${type},${h02ReplyTime(unixSeconds)}#`)
}
