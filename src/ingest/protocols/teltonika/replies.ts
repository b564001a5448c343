/**
 * What the server sends a Teltonika device: the answer to its IMEI handshake, and to each AVL
 * packet the number of records accepted, sent only after they are committed. A command answer
 * (Codec 12, 13, 14) gets nothing: it ends the exchange the server's command began.
 */

/** Server answer to the IMEI handshake: accept (0x01) or refuse (0x00) the device. */
export function teltonikaImeiResponse(accepted: boolean): Uint8Array {
  return Uint8Array.of(accepted ? 0x01 : 0x00)
}

/** Server answer to an AVL packet: the number of records accepted, as a 4-byte big-endian int. */
export function buildTeltonikaAck(recordCount: number): Uint8Array {
  const ack = new Uint8Array(4)
  new DataView(ack.buffer).setUint32(0, recordCount >>> 0)
  return ack
}
