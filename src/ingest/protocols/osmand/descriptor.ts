/**
 * OsmAnd / Traccar Client as a unit: HTTP on OSMAND_PORT (default 5055), its own server
 * (listener.ts); every request names its device and is answered 200 after its commit.
 */
import type { HttpProtocol } from '../protocol'
import { startOsmandListener } from './listener'
import { osmandModel } from './model'

export const osmand: HttpProtocol = {
  name: 'osmand',
  title: 'OsmAnd / Traccar Client',
  transport: 'http',
  defaultPort: 5055,
  portVariable: 'OSMAND_PORT',
  model: osmandModel,
  start: startOsmandListener,
}
