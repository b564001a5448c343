/**
 * The built-in GT06 model: the commands Concox's GT06N and JM-VL03 documents and the clones'
 * manuals give (online command texts, the same as by SMS), sent as online commands (command.ts).
 * `TIMER` sets the upload interval in seconds (the device keeps it within its own range, 5 to
 * 18,000 on the GT06N); `APN` the access point alone (its user and password are set by SMS).
 */
import { APN_PATTERN } from '../fields'
import type { BuiltinModel } from '../protocol'

const id = (n: number) => `b0000002-0000-4000-8000-${n.toString(16).padStart(12, '0')}`

export const gt06Model: BuiltinModel = {
  id: id(0),
  name: 'GT06 / Concox',
  commands: [
    {
      id: id(1),
      name: 'Engine stop',
      widget: { type: 'button', label: 'Stop engine', confirm: true, confirm_message: 'The relay cuts the fuel supply: the vehicle will stop. Continue?' },
      send: { text: 'RELAY,1#' },
    },
    {
      id: id(2),
      name: 'Engine resume',
      widget: { type: 'button', label: 'Resume engine', confirm: true, confirm_message: 'The fuel supply will be restored. Continue?' },
      send: { text: 'RELAY,0#' },
    },
    { id: id(3), name: 'Position', widget: { type: 'button', label: 'Ask for the position', confirm: false }, send: { text: 'WHERE#' } },
    { id: id(4), name: 'Status', widget: { type: 'button', label: 'Ask for the status', confirm: false }, send: { text: 'STATUS#' } },
    {
      id: id(5),
      name: 'Reporting interval',
      widget: { type: 'form', fields: [{ name: 'seconds', type: 'number', label: 'Seconds between positions', pattern: '[1-9][0-9]{0,4}' }] },
      send: { text: 'TIMER,{seconds}#' },
    },
    {
      id: id(6),
      name: 'Set APN',
      widget: { type: 'form', fields: [{ name: 'apn', type: 'text', label: 'APN', pattern: APN_PATTERN }] },
      send: { text: 'APN,{apn}#' },
    },
    {
      id: id(7),
      name: 'Reboot',
      widget: { type: 'button', label: 'Reboot the tracker', confirm: true, confirm_message: 'The tracker restarts and is offline for a minute. Continue?' },
      send: { text: 'RESET#' },
    },
  ],
}
