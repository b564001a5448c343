/**
 * Watch commands: `[<maker>*<id>*<length hex>*<command>[,<parameter>…]]`, the framing the watch's
 * own frames use. The maker and the serial-number field are the ones the watch's frames show (a
 * watch ignores a frame under another maker; ZJ-style watches number theirs and expect a number
 * back: 0001); SG and no number until the watch has spoken. A watch answers a command by echoing
 * its name (`[SG*<id>*0002*CR]`): such a frame completes the oldest command waiting (it carries
 * nothing the server chose).
 */
import type { CommandAnswer, EncodedCommand } from '../protocol'
import { watchFrame, type WatchHeader } from './decoder'
import { WATCH_MAX_FRAME_BYTES } from './framing'
import { RememberedByDevice } from '../remembered'

const DEFAULT_MAKER = 'SG'
const COMMAND_INDEX = '0001'
/** watches not speaking the default (SG, no serial number): only those are kept, so it stays small */
const dialects = new RememberedByDevice<{ maker: string; indexed: boolean }>()

/** A watch showed its maker and whether it numbers its frames. */
export function rememberWatchDialect(header: WatchHeader): void {
  const indexed = header.index !== null
  dialects.delete(header.id)
  if (header.maker === DEFAULT_MAKER && !indexed) return
  dialects.set(header.id, { maker: header.maker, indexed })
}

/** `,` separates parameters; `*`, `[` and `]` are the frame's own. */
export const WATCH_COMMAND_SEPARATORS = [',', '*', '[', ']'] as const

const COMMAND_TEXT = /^[A-Za-z0-9_]{1,20}(,[\x20-\x29\x2b-\x5a\x5c\x5e-\x7e]*)*$/

export function encodeWatchCommand(text: string, uniqueId: string): EncodedCommand {
  if (!COMMAND_TEXT.test(text)) return { kind: 'unfit', reason: 'a watch command is its name (letters, digits, _) and its parameters after commas, printable ASCII without *, [ or ]' }
  const dialect = dialects.get(uniqueId)
  const frame = watchFrame(dialect?.maker ?? DEFAULT_MAKER, uniqueId, dialect?.indexed ? COMMAND_INDEX : null, text)
  if (frame.length > WATCH_MAX_FRAME_BYTES) return { kind: 'unfit', reason: `a watch frame of ${frame.length} bytes, more than ${WATCH_MAX_FRAME_BYTES}` }
  return { kind: 'frame', bytes: new TextEncoder().encode(frame) }
}

/** The echo of a command as the command queue keeps it: the frame's content. */
export function watchAnswerOf(content: string): CommandAnswer {
  return { text: content }
}
