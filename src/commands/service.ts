/** The commands a device's model offers, with their widgets exactly as stored. */
import type { Database } from 'bun:sqlite'
import type { DeviceAccess } from '../devices/access'
import { requireDevice } from '../devices/service'
import type { UserPrincipal } from '../principal'
import type { CommandBody } from './model'

export function createCommandService(sqlite: Database, access: DeviceAccess) {
  const byModel = sqlite.query<{ id: string; name: string; widget: string }, [string]>(
    'SELECT id, name, widget FROM commands WHERE model_id = ? ORDER BY ordinal, id',
  )
  return {
    forDevice(principal: UserPrincipal, deviceId: string): CommandBody[] {
      const device = requireDevice(access, principal, deviceId)
      return byModel.all(device.model_id).map((c) => ({ id: c.id, name: c.name, widget: JSON.parse(c.widget) }))
    },
  }
}

export type CommandService = ReturnType<typeof createCommandService>
