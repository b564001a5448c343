/**
 * Frames the server sends a Meitrack device: `@@<flag><length>,<IMEI>,<content>*<checksum>\r\n`
 * (Meitrack GPRS protocol, "GPRS command format": `length` counts from the first comma through the
 * CR LF, the checksum is the sum of the bytes from `@` through `*`, mod 256, in uppercase hex).
 * Answers to a device's frame repeat that frame's flag: "whether the data identifier in the reply
 * command is the same as that of the sending command" is how the device knows what was confirmed
 * (T622 GPRS protocol, CCC).
 */
import { meitrackChecksum } from './framing'

export function buildMeitrackFrame(flag: string, imei: string, content: string): Uint8Array {
  const length = 1 + imei.length + 1 + content.length + 1 + 2 + 2
  const head = `@@${flag}${length},${imei},${content}*`
  const bytes = new Uint8Array(head.length + 4)
  for (let i = 0; i < head.length; i++) bytes[i] = head.charCodeAt(i) & 0xff
  const checksum = meitrackChecksum(bytes, 0, head.length)
  bytes[head.length] = checksum.charCodeAt(0)
  bytes[head.length + 1] = checksum.charCodeAt(1)
  bytes[head.length + 2] = 0x0d
  bytes[head.length + 3] = 0x0a
  return bytes
}
