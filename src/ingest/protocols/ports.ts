/**
 * Each device protocol's port, by protocol name, from its own port variable (OSMAND_PORT,
 * GT06_PORT, TELTONIKA_PORT, H02_PORT, …, declared in its descriptor); 0 turns its listener off.
 * Read here, where the protocols are known, rather than in config.ts, which imports nothing above it.
 */
import { type Env, readPort } from '../../config'
import { PROTOCOLS } from './index'

/** throws a ConfigError naming the variable when one is not an integer from 0 to 65535 */
export function devicePortsOf(env: Readonly<Env>): Record<string, number> {
  return Object.fromEntries(PROTOCOLS.map((protocol) => [protocol.name, readPort(env, protocol.portVariable, protocol.defaultPort)]))
}
