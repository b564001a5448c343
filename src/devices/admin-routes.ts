import { Elysia } from 'elysia'
import { asUser, type authPlugin } from '../http/auth'
import { IdParams, responses } from '../http/model'
import { loggedRequestId } from '../ops/requests'
import { CreateDeviceBody, UpdateDeviceBody } from './admin-model'
import type { DeviceAdmin } from './admin-service'
import { Device } from './model'
import type { DeviceService } from './service'

export interface DeviceAdminRouteDeps {
  admin: DeviceAdmin
  devices: DeviceService
}

const ADMIN =
  "Account admins only: a member or a share token gets 403. Another account's device is 404. The change is in the audit log " +
  '(GET /audit) with your user id and the request id, written in the same transaction.'

const IDENTIFIERS =
  '`imei` is exactly 15 digits (no check-digit test); `serial` 1 to 64 printable ASCII characters without spaces; `""` means none. ' +
  'A device is recognised by either when it reports, so they share one namespace: an identifier that is already the IMEI or the serial ' +
  'of any device on the server (any account, unlinked ones included) is 409. The ingest listeners of this server use a new or changed ' +
  'identifier from the next report on (another server process on the same database: within a second), and refuse an old one.'

/** POST /devices, PATCH and DELETE /devices/{id}: the account admin's. */
export function deviceAdminRoutes(auth: ReturnType<typeof authPlugin>, { admin, devices }: DeviceAdminRouteDeps) {
  return new Elysia({ name: 'device-admin', prefix: '/devices' })
    .use(auth)
    .post(
      '',
      async ({ principal, body, set }) => {
        const user = asUser(principal)
        const created = await admin.createDevice(body, user.accountId, user.userId, loggedRequestId(set))
        set.status = 201
        set.headers.location = `/devices/${created.id}`
        return devices.get(user, created.id)
      },
      {
        auth: 'admin',
        body: CreateDeviceBody,
        detail: {
          tags: ['Administration'],
          summary: 'Add a device to your account',
          description:
            `201 with the device as GET /devices/{id} shows it and \`Location: /devices/{id}\`; the server chooses its id. \`imei\` or \`serial\` is required. ${IDENTIFIERS} ` +
            `An unknown \`model\` (another account's model is unknown to you: a device may use a server-wide model or one of its own account's) and a group that is not your account's are 404 (a reference that does not exist for you, as for share links). ${ADMIN}`,
          responses: responses({ 201: { schema: Device, description: 'The new device' } }, 400, 401, 403, 404, 409, 429, 504),
        },
      },
    )
    .patch(
      '/:id',
      async ({ principal, params, body, set }) => {
        const user = asUser(principal)
        const updated = await admin.updateDevice(params.id, body, user.accountId, user.userId, loggedRequestId(set))
        return devices.get(user, updated.id)
      },
      {
        auth: 'admin',
        params: IdParams,
        body: UpdateDeviceBody,
        detail: {
          tags: ['Administration'],
          summary: 'Change a device of your account',
          description:
            `Any of the creation fields; only those sent change (\`groups\` and \`properties\` replace). The device must keep an \`imei\` or a \`serial\`. ` +
            `${IDENTIFIERS} A new identifier is checked; one left as it is is not. New \`groups\`: a share link keeps the device only where the user ` +
            `who made it still reaches it (a link left with no device is revoked). ${ADMIN}`,
          responses: responses({ 200: { schema: Device, description: 'The device' } }, 400, 401, 403, 404, 409, 429, 504),
        },
      },
    )
    .delete(
      '/:id',
      async ({ principal, params, set }) => {
        const user = asUser(principal)
        await admin.deleteDevice(params.id, user.accountId, user.userId, loggedRequestId(set))
        set.status = 204
        return null
      },
      {
        auth: 'admin',
        params: IdParams,
        detail: {
          tags: ['Administration'],
          summary: 'Delete a device of your account',
          description:
            'The device, its positions and its events are gone for good; it leaves its groups and share links, and a link left with no device ' +
            `is revoked (its token is 401 from the next request). Its identifiers are refused by ingestion from the next report. ${ADMIN}`,
          responses: responses({ 204: { description: 'Deleted' } }, 400, 401, 403, 404, 429, 504),
        },
      },
    )
}
