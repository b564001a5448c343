/**
 * The built-in OsmAnd model, for phones running OsmAnd or Traccar Client: it has no commands,
 * because the protocol is the phone's HTTP requests to the server and the server has no way to
 * reach the phone between them.
 */
import type { BuiltinModel } from '../protocol'

export const osmandModel: BuiltinModel = {
  id: 'b0000001-0000-4000-8000-000000000000',
  name: 'OsmAnd / Traccar Client (phone)',
  commands: [],
}
