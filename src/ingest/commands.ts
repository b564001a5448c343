/**
 * Commands on a TCP listener's connections: the session handler (tcp.ts) opens a line for each
 * device that logs in, and the line carries out the command queue's rules (commands/queue.ts)
 * with the protocol unit's encoder. The queue decides what goes and when; a line only asks it,
 * puts the text on the wire, and hands back the answers:
 *
 *   login                onReconnect (a command sent and unanswered goes once more, or fails at
 *                        its second miss), then deliver
 *   deliver              nextToSend → encode (with the connection's state, which its decoder
 *                        keeps: protocols/protocol.ts) → markSent → write; a text the protocol
 *                        cannot carry → markFailed, and the next one
 *   queue.onReady(key)   the device's newest line delivers (a command was queued, or the previous
 *                        one was answered, or its answer wait ended)
 *   an answer frame      markAnswered, with the command its reference names (GT06's server flag),
 *                        else the oldest waiting
 *
 * markSent comes before the write, in the same turn of the event loop: markSent answers false for
 * a command cancelled or expired meanwhile, and such a command must not reach the device. Should
 * the connection drop under the write, the command is `sent` and the next login sends it again.
 *
 * Each line runs one thing at a time (a promise chain), so two deliveries never race on it; a
 * failure in one (the database busy past its retries) is logged and the next request goes on.
 */
import type { Clock } from '../clock'
import type { CommandQueue } from '../commands/queue'
import type { Logger } from '../log'
import type { CommandAnswer, TcpProtocol } from './protocols/protocol'

/** What the listener needs of the command queue. */
export type CommandDelivery = Pick<CommandQueue, 'nextToSend' | 'markSent' | 'markAnswered' | 'markFailed' | 'onReconnect' | 'onReady'>

/** references of the commands sent on one connection kept for their answers; older ones are answered as the oldest waiting */
const MAX_REFERENCES = 32

/** A command's reference: the first 32 bits of its id, the same at every sending (a re-send after a restart included). */
export function commandRef(id: string): number {
  return Number.parseInt(id.slice(0, 8), 16) >>> 0
}

/** One connection's device, as the commands see it. */
export interface CommandLine {
  /** a frame carried the device's answer to a command */
  answer(answer: CommandAnswer): void
  /** the connection closed, or now speaks for another device */
  close(): void
}

export interface CommandCourier<S = unknown> {
  /** a device logged in on this connection: its line, which starts with the reconnection; `state` is the connection's, which the unit's encoder reads and writes */
  open(deviceKey: number, uniqueId: string, connection: { write(bytes: Uint8Array): void; readonly closed: boolean }, state: S): CommandLine
  /** no more deliveries (the listener stops) */
  stop(): void
}

interface Line extends CommandLine {
  deliver(): void
}

export function createCommandCourier<F, S>(protocol: TcpProtocol<F, S>, queue: CommandDelivery, options: { clock: Clock; log: Logger }): CommandCourier<S> {
  const { clock, log } = options
  const name = protocol.name
  const encode = protocol.encodeCommand
  if (!encode) throw new Error(`${name} carries no commands`)
  /** each device's open lines, oldest first: a device that opened a new connection is sent to on it */
  const lines = new Map<number, Line[]>()
  const unsubscribe = queue.onReady((deviceKey) => lines.get(deviceKey)?.at(-1)?.deliver())

  function open(deviceKey: number, uniqueId: string, connection: { write(bytes: Uint8Array): void; readonly closed: boolean }, state: S): CommandLine {
    let chain: Promise<void> = Promise.resolve()
    let deliveryDue = false
    let closed = false
    let sequence = 0
    /** reference → the command sent with it, on this connection */
    const sentRefs = new Map<number, string>()
    const failed = (error: unknown) => log.warn(`${name} command delivery failed`, { device: deviceKey, error: (error as Error)?.message })
    const then = (work: () => Promise<unknown>) => {
      chain = chain.then(work).then(() => undefined, failed)
    }
    const gone = () => closed || connection.closed

    async function deliverNext(): Promise<void> {
      while (!gone()) {
        const next = await queue.nextToSend(deviceKey, clock.now())
        // (a command handed out to a line that closed meanwhile is held a few seconds, then handed out again)
        if (next === null || gone()) return
        const ref = commandRef(next.id)
        const encoded = encode!(next.text, { uniqueId, ref, sequence: ++sequence, now: Math.floor(clock.now() / 1000) }, state)
        if (encoded.kind === 'unfit') {
          log.info(`${name} cannot carry the command`, { id: next.id, device: deviceKey, reason: encoded.reason })
          await queue.markFailed(next.id, clock.now())
          continue
        }
        // false: cancelled or expired since it was handed out; the next one may go
        if (!(await queue.markSent(next.id, clock.now()))) continue
        connection.write(encoded.bytes)
        sentRefs.delete(ref)
        sentRefs.set(ref, next.id)
        if (sentRefs.size > MAX_REFERENCES) sentRefs.delete(sentRefs.keys().next().value!)
        return
      }
    }

    const line: Line = {
      deliver() {
        if (deliveryDue || gone()) return
        deliveryDue = true
        then(() => {
          deliveryDue = false
          return deliverNext()
        })
      },
      answer(answer) {
        const id = answer.ref === undefined ? undefined : sentRefs.get(answer.ref)
        then(async () => {
          const answered = await queue.markAnswered(deviceKey, answer.text, clock.now(), id)
          if (answered === null) log.debug(`${name} command answer with no command waiting for it`, { device: deviceKey })
          else if (id !== undefined) sentRefs.delete(answer.ref!)
        })
      },
      close() {
        if (closed) return
        closed = true
        const list = lines.get(deviceKey)?.filter((l) => l !== line) ?? []
        if (list.length > 0) lines.set(deviceKey, list)
        else lines.delete(deviceKey)
      },
    }
    lines.set(deviceKey, [...(lines.get(deviceKey) ?? []), line])
    then(() => queue.onReconnect(deviceKey, clock.now()))
    line.deliver()
    return line
  }

  return { open, stop: unsubscribe }
}
