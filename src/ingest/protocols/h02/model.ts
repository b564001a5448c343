/**
 * The built-in H02 model: the commands of the H02 document ("command structure from center
 * sending"), as `send.text` is for H02, `<command>[,<parameter>…]` (command.ts puts the maker, the
 * device's id and the time around it): `S20` cuts (1,1) or restores (1,0) fuel and power, `SCF`
 * arms (0,0) or disarms (1,1), `S71,22,<seconds>` sets the reporting interval. The documents give
 * no position request or reboot that devices agree on: none is offered.
 */
import type { BuiltinModel } from '../protocol'

const id = (n: number) => `b0000004-0000-4000-8000-${n.toString(16).padStart(12, '0')}`

export const h02Model: BuiltinModel = {
  id: id(0),
  name: 'H02 (Sinotrack, Coban)',
  commands: [
    {
      id: id(1),
      name: 'Engine stop',
      widget: { type: 'button', label: 'Stop engine', confirm: true, confirm_message: 'Fuel and power are cut: the vehicle will stop. Continue?' },
      send: { text: 'S20,1,1' },
    },
    {
      id: id(2),
      name: 'Engine resume',
      widget: { type: 'button', label: 'Resume engine', confirm: true, confirm_message: 'Fuel and power will be restored. Continue?' },
      send: { text: 'S20,1,0' },
    },
    { id: id(3), name: 'Arm', widget: { type: 'button', label: 'Arm the alarm', confirm: false }, send: { text: 'SCF,0,0' } },
    { id: id(4), name: 'Disarm', widget: { type: 'button', label: 'Disarm the alarm', confirm: false }, send: { text: 'SCF,1,1' } },
    {
      id: id(5),
      name: 'Reporting interval',
      widget: { type: 'form', fields: [{ name: 'seconds', type: 'number', label: 'Seconds between positions', pattern: '[1-9][0-9]{0,4}' }] },
      send: { text: 'S71,22,{seconds}' },
    },
  ],
}
