/**
 * What a protocol unit is. Each protocol lives in its own folder (protocols/<name>/: its framing,
 * its pure decoder, its replies) and exports one descriptor of this shape; the protocol list
 * (index.ts) holds them, and the server, the config, /ready, the metrics and the docs read them
 * from there. Adding a protocol touches nothing outside its folder but one line of that list.
 *
 * A TCP protocol gives the shared session handler (../tcp.ts) what it cannot know itself: how the
 * byte stream splits into frames (a reader for the framing machine, framing.ts) and what each
 * frame asks of it (a Step). The handler does the rest the same way for every protocol: the
 * device's session, reports committed before their replies, the caps and the timeouts.
 */
import type { Clock } from '../../clock'
import type { Logger } from '../../log'
import type { IngestPipeline } from '../pipeline'
import type { DecodedReport } from '../types'
import type { FrameReader } from './framing'

/** A form field of a built-in command: `pattern` (a regular expression the whole value must match) says what it takes. */
export interface BuiltinField {
  readonly name: string
  readonly type: 'text' | 'number' | 'password'
  readonly label: string
  readonly pattern?: string
}

/** A command of a built-in model, as the import format writes one (docs/import-format.md). */
export interface BuiltinCommand {
  /** fixed, like the model's: sent commands and people's habits keep naming it from one version to the next */
  readonly id: string
  readonly name: string
  readonly widget:
    | { readonly type: 'button'; readonly label: string; readonly confirm: boolean; readonly confirm_message?: string }
    | { readonly type: 'form'; readonly fields: readonly BuiltinField[] }
  /** the text the device receives, `{field}` standing for a form field's value */
  readonly send: { readonly text: string }
}

/**
 * The model the product ships for a protocol: server-wide (no account), with the protocol's
 * standard commands, so that an account needs no model of its own. The server creates it, or
 * brings it up to date, at every start (commands/catalogue.ts); its id never changes.
 */
export interface BuiltinModel {
  readonly id: string
  readonly name: string
  readonly commands: readonly BuiltinCommand[]
}

interface ProtocolBase {
  /** lower case: the metrics label, the log prefix, the key of the server's ports, a model's `protocol` */
  readonly name: string
  /** for people: the docs, the configuration's description */
  readonly title: string
  readonly defaultPort: number
  /** the environment variable of its port; 0 turns the listener off */
  readonly portVariable: string
  /** the protocol's built-in model (its folder's model.ts) */
  readonly model: BuiltinModel
}

/** What a connection knows when it decodes a frame. */
export interface FrameContext {
  /** the server's clock, Unix seconds */
  now: number
  /** the identifier the connection's device logged in with (or named in its first report); null before */
  uniqueId: string | null
}

/** What one frame asks of the session handler. */
export type Step =
  /**
   * The device names itself (a GT06 login, a Teltonika IMEI handshake): its session is opened
   * and committed, then `accept` is sent. Refused (unknown): `refuse` is sent, when there is
   * one, and the connection is closed. Masked (unknown, past its source's ration): `accept` all
   * the same, and the connection's later reports are answered but dropped (../tcp.ts).
   */
  | { kind: 'login'; uniqueId: string; accept: Uint8Array | null; refuse: Uint8Array | null }
  /**
   * Store `report`, then send `reply`. Its device is the connection's; on a connection that has
   * none yet (a protocol without a login, H02), the report's identifier opens the session first,
   * as a login would, and an unknown one closes the connection.
   */
  | { kind: 'report'; report: DecodedReport; reply: Uint8Array | null; commandAnswer?: CommandAnswer }
  /** Nothing to store: send `reply` now (a time request). Null: the device only showed it is there. */
  | { kind: 'answer'; reply: Uint8Array | null; commandAnswer?: CommandAnswer }
  /** Nothing to do (a frame that does not decode, a message not kept): `reason` is logged at debug. */
  | { kind: 'drop'; reason: string }
  /** The connection cannot go on (data before a login). */
  | { kind: 'close'; reason: string }

/**
 * A device's answer to a command the server sent (`commandAnswer` on a report or an answer Step):
 * the session handler hands it to the command queue, which completes the command it answers.
 */
export interface CommandAnswer {
  /** the answer as text */
  text: string
  /** the reference the command carried, when the answer echoes it (GT06's server flag): it names the command answered */
  ref?: number
}

/** What the server knows when it puts a command on a connection's wire. */
export interface CommandTarget {
  /** the identifier the connection's device logged in with (H02 repeats it in every command) */
  uniqueId: string
  /** a 32-bit number chosen for this command, the same at each sending; a protocol whose answers echo it (GT06) carries it */
  ref: number
  /** 1 for the connection's first command, then 2, …: a serial number for protocols that want one */
  sequence: number
  /** the server's clock, Unix seconds */
  now: number
}

/** A command's text on the wire, or why the protocol cannot carry it (too long, characters it has no way to send): the command fails. */
export type EncodedCommand = { kind: 'frame'; bytes: Uint8Array } | { kind: 'unfit'; reason: string }

/**
 * A TCP protocol unit. `S` is what one connection remembers (the unit's own type: H02's last status
 * word and the maker the device named, a watch's dialect, the references JT808 serials and Meitrack
 * flags went out under). The session handler makes it with `connectionState()` when the connection
 * opens, hands that one object to every `decode` and every `encodeCommand` of the connection, and
 * drops it when the connection closes: what a decoder tells its encoder lives exactly as long as
 * the connection, is never shared with another one, and cannot be crowded out by what other
 * connections send. A device that reconnects starts afresh and is learned again from its frames,
 * which come before any command (a command goes out only once a frame has identified the device).
 * The handler never looks inside it.
 */
export interface TcpProtocol<F = unknown, S = unknown> extends ProtocolBase {
  readonly transport: 'tcp'
  /** a new connection's framing rules (a reader may keep state: a handshake seen, a learned length) */
  framing(): FrameReader<F>
  /** a new connection's state (a unit that keeps nothing gives null) */
  connectionState(): S
  /** What a frame asks of the session handler; it may update the connection's `state`. Pure otherwise. */
  decode(frame: F, context: FrameContext, state: S): Step
  /**
   * A command's text as this protocol sends it on the connection whose `state` is given (absent:
   * its devices take no commands). Its devices' answers come back as `commandAnswer` on the Steps
   * its decoder returns.
   */
  encodeCommand?(text: string, target: CommandTarget, state: S): EncodedCommand
  /**
   * The characters that split this protocol's command texts into commands or parameters (GT06's
   * `#` and `,`): a form value holding one would send more than its field, so it is refused (400)
   * unless the field's pattern allows it (commands/sending.ts). Declared with encodeCommand.
   */
  readonly commandSeparators?: readonly string[]
}

/** What an HTTP protocol's listener is started with. */
export interface HttpListenerOptions {
  pipeline: IngestPipeline
  clock: Clock
  log: Logger
  port: number
  hostname?: string
}

export interface Listener {
  /** the port actually bound */
  port: number
  /** stop accepting; in-flight requests finish */
  stop(): Promise<void>
}

export interface HttpProtocol extends ProtocolBase {
  readonly transport: 'http'
  /** its own server on its own port */
  start(options: HttpListenerOptions): Listener
}

// any: the list holds units of different frame types; each unit is checked against its own
export type Protocol = TcpProtocol<any, any> | HttpProtocol
