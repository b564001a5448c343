/**
 * The protocol list: every protocol unit the server speaks, one line each. The server starts a
 * listener for each (on its port variable; 0 turns it off), the config validates the port
 * variables, and /ready, the metrics and the API description name them from here. A new protocol
 * is a folder beside these and one line below.
 */
import { gl200 } from './gl200/descriptor'
import { gps103 } from './gps103/descriptor'
import { gt06 } from './gt06/descriptor'
import { h02 } from './h02/descriptor'
import { jt808 } from './jt808/descriptor'
import { meitrack } from './meitrack/descriptor'
import { osmand } from './osmand/descriptor'
import type { Protocol } from './protocol'
import { teltonika } from './teltonika/descriptor'
import { watch } from './watch/descriptor'

export const PROTOCOLS = [osmand, gt06, teltonika, h02, gl200, jt808, meitrack, gps103, watch] as const satisfies readonly Protocol[]
