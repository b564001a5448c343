/**
 * Watches (3G/4G child and elder watches, `[SG*<id>*<length>*…]`) as a unit: TCP on WATCH_PORT
 * (default 5093; 0 turns it off). There is no login: every frame names the watch by its id, which
 * the pipeline looks up as a device's IMEI or serial (a 10-digit watch id is imported as the
 * serial), and the first frame opens the session. Replies are framed as the watch's own frames
 * (its maker, its serial-number field) and sent after the commit: LK, AL, TKQ/TKQ2, INIT.
 * A frame that echoes a command's name answers that command (command.ts).
 */
import type { Step, TcpProtocol } from '../protocol'
import { encodeWatchCommand, rememberWatchDialect, WATCH_COMMAND_SEPARATORS, watchAnswerOf, watchDialect, type WatchDialect } from './command'
import { decodeWatchFrame, WATCH_COMMAND_ANSWERS, watchFrame } from './decoder'
import { watchFrameReader } from './framing'
import { watchModel } from './model'

const encoder = new TextEncoder()

export const watch: TcpProtocol<string, WatchDialect> = {
  name: 'watch',
  title: 'Child and elder watches (SeTracker, 3G/4G)',
  transport: 'tcp',
  defaultPort: 5093,
  portVariable: 'WATCH_PORT',
  model: watchModel,
  framing: () => watchFrameReader(),
  // the dialect the connection's watch speaks (command.ts)
  connectionState: watchDialect,
  decode(frame, _context, dialect): Step {
    const message = decodeWatchFrame(frame)
    if (message.kind === 'invalid') return { kind: 'drop', reason: message.reason }
    const { header, report, replyContent } = message
    rememberWatchDialect(dialect, header)
    const reply = replyContent === null ? null : encoder.encode(watchFrame(header.maker, header.id, header.index, replyContent))
    const answer = WATCH_COMMAND_ANSWERS.has(header.type) ? { commandAnswer: watchAnswerOf(header.content) } : {}
    return { kind: 'report', report, reply, ...answer }
  },
  encodeCommand: (text, { uniqueId }, dialect) => encodeWatchCommand(text, uniqueId, dialect),
  commandSeparators: WATCH_COMMAND_SEPARATORS,
}
