/**
 * Watch commands: `[<maker>*<id>*<length hex>*<command>[,<parameter>…]]`, the framing the watch's
 * own frames use. The maker and the serial-number field are the ones the watch's frames on the
 * same connection show (a watch ignores a frame under another maker; ZJ-style watches number
 * theirs and expect a number back: 0001); SG and no number until the watch has spoken, which it
 * has before its first command (a command waits for the frame that identifies the watch). A watch answers a command by echoing
 * its name (`[SG*<id>*0002*CR]`): such a frame completes the oldest command waiting (it carries
 * nothing the server chose).
 */
import type { CommandAnswer, EncodedCommand } from '../protocol'
import { watchFrame, type WatchHeader } from './decoder'
import { WATCH_MAX_FRAME_BYTES } from './framing'

const DEFAULT_MAKER = 'SG'
const COMMAND_INDEX = '0001'

/** A connection's state (protocol.ts): the dialect its watch's frames show, which the decoder writes and the encoder reads. */
export interface WatchDialect {
  /** the watch whose frame last showed it on this connection (null: none has) */
  dialectOf: string | null
  maker: string
  /** the watch numbers its frames */
  indexed: boolean
}

/** A connection's state before its watch has spoken. */
export function watchDialect(): WatchDialect {
  return { dialectOf: null, maker: DEFAULT_MAKER, indexed: false }
}

/** A watch showed its maker and whether it numbers its frames, on the connection of `dialect`. */
export function rememberWatchDialect(dialect: WatchDialect, header: WatchHeader): void {
  dialect.dialectOf = header.id
  dialect.maker = header.maker
  dialect.indexed = header.index !== null
}

/** `,` separates parameters; `*`, `[` and `]` are the frame's own. */
export const WATCH_COMMAND_SEPARATORS = [',', '*', '[', ']'] as const

const COMMAND_TEXT = /^[A-Za-z0-9_]{1,20}(,[\x20-\x29\x2b-\x5a\x5c\x5e-\x7e]*)*$/

/** The frame carrying `text` to watch `uniqueId`, in the dialect its frames on this connection showed. */
export function encodeWatchCommand(text: string, uniqueId: string, dialect: WatchDialect): EncodedCommand {
  if (!COMMAND_TEXT.test(text)) return { kind: 'unfit', reason: 'a watch command is its name (letters, digits, _) and its parameters after commas, printable ASCII without *, [ or ]' }
  const known = dialect.dialectOf === uniqueId
  const frame = watchFrame(known ? dialect.maker : DEFAULT_MAKER, uniqueId, known && dialect.indexed ? COMMAND_INDEX : null, text)
  if (frame.length > WATCH_MAX_FRAME_BYTES) return { kind: 'unfit', reason: `a watch frame of ${frame.length} bytes, more than ${WATCH_MAX_FRAME_BYTES}` }
  return { kind: 'frame', bytes: new TextEncoder().encode(frame) }
}

/** The echo of a command as the command queue keeps it: the frame's content. */
export function watchAnswerOf(content: string): CommandAnswer {
  return { text: content }
}
