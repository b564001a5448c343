/**
 * The built-in GPS103 model: the TK102/TK103 "GPRS Data Protocol" document's commands, as
 * `send.text` is for GPS103, `<code>[,<parameter>…]` (command.ts puts `**,imei:<IMEI>,` before it
 * and `;` after). The interval of C is the document's form: two digits and s, m or h (`30s`, `05m`, `01h`).
 */
import type { BuiltinModel } from '../protocol'

export const gps103Model: BuiltinModel = {
  id: '9c3ca291-4744-423c-a6f1-4f36f212fec9',
  name: 'GPS103 (Coban TK103/TK303)',
  commands: [
    { id: 'e39cd090-cb23-4d12-8d9d-b78c5fd39b36', name: 'Position request', widget: { type: 'button', label: 'Locate now', confirm: false }, send: { text: 'B' } },
    {
      id: '686de417-ec6b-4988-989a-6c5091a5af7a',
      name: 'Reporting interval',
      widget: { type: 'form', fields: [{ name: 'interval', type: 'text', label: 'Interval: two digits and s, m or h (30s, 05m, 01h)', pattern: '[0-9]{2}[smh]' }] },
      send: { text: 'C,{interval}' },
    },
    { id: 'cb9b5d9b-bfcd-40fa-97f4-f4a86f9a7cc8', name: 'Stop reporting', widget: { type: 'button', label: 'Stop periodic positions', confirm: false }, send: { text: 'D' } },
    { id: '3d80698b-443f-4dfd-89b8-f7649091db2e', name: 'Cancel alarm', widget: { type: 'button', label: 'Cancel the alarm', confirm: false }, send: { text: 'E' } },
    {
      id: '1d313d98-8df8-459d-82f8-1bdc9b4e120d',
      name: 'Engine stop',
      widget: { type: 'button', label: 'Stop engine', confirm: true, confirm_message: 'Fuel and power are cut: the vehicle will stop. Continue?' },
      send: { text: 'J' },
    },
    {
      id: '384715d4-6348-473b-bc81-6c71caf4c2ae',
      name: 'Engine resume',
      widget: { type: 'button', label: 'Resume engine', confirm: true, confirm_message: 'Fuel and power will be restored. Continue?' },
      send: { text: 'K' },
    },
    { id: '8706e7a8-64af-4b5d-8a32-9fefec04eb33', name: 'Arm', widget: { type: 'button', label: 'Arm the alarm', confirm: false }, send: { text: 'L' } },
    { id: '704785c5-abbc-4be2-bdde-052ff21713f5', name: 'Disarm', widget: { type: 'button', label: 'Disarm the alarm', confirm: false }, send: { text: 'M' } },
  ],
}
