/**
 * The built-in Teltonika model: SMS/GPRS commands of the FMB/FMC family (Teltonika wiki, "FMB
 * SMS/GPRS command list"), sent in Codec 12 (command.ts). Engine stop and resume switch digital
 * output 1, where an immobiliser relay is wired (`setdigout 1` / `setdigout 0`). The reporting
 * interval is `setparam` of the "Vehicle moving" min period (seconds) for the home, roaming and
 * unknown networks (parameters 10050, 10150, 10250); the APN is parameter 2001.
 */
import { APN_PATTERN } from '../fields'
import type { BuiltinModel } from '../protocol'

const id = (n: number) => `b0000003-0000-4000-8000-${n.toString(16).padStart(12, '0')}`

export const teltonikaModel: BuiltinModel = {
  id: id(0),
  name: 'Teltonika FMB / FMC',
  commands: [
    {
      id: id(1),
      name: 'Engine stop',
      widget: { type: 'button', label: 'Stop engine (output 1 on)', confirm: true, confirm_message: 'Digital output 1 switches the immobiliser on: the vehicle will stop. Continue?' },
      send: { text: 'setdigout 1' },
    },
    {
      id: id(2),
      name: 'Engine resume',
      widget: { type: 'button', label: 'Resume engine (output 1 off)', confirm: true, confirm_message: 'Digital output 1 switches the immobiliser off. Continue?' },
      send: { text: 'setdigout 0' },
    },
    { id: id(3), name: 'Position', widget: { type: 'button', label: 'Ask for the position', confirm: false }, send: { text: 'getgps' } },
    { id: id(4), name: 'Status', widget: { type: 'button', label: 'Ask for the status', confirm: false }, send: { text: 'getstatus' } },
    { id: id(5), name: 'Firmware version', widget: { type: 'button', label: 'Ask for the firmware version', confirm: false }, send: { text: 'getver' } },
    {
      id: id(6),
      name: 'Reporting interval',
      widget: { type: 'form', fields: [{ name: 'seconds', type: 'number', label: 'Seconds between positions while moving', pattern: '[1-9][0-9]{0,6}' }] },
      send: { text: 'setparam 10050:{seconds};10150:{seconds};10250:{seconds}' },
    },
    {
      id: id(7),
      name: 'Set APN',
      widget: { type: 'form', fields: [{ name: 'apn', type: 'text', label: 'APN', pattern: APN_PATTERN }] },
      send: { text: 'setparam 2001:{apn}' },
    },
    {
      id: id(8),
      name: 'Reboot',
      widget: { type: 'button', label: 'Reboot the tracker', confirm: true, confirm_message: 'The tracker restarts and is offline for a minute. Continue?' },
      send: { text: 'cpureset' },
    },
  ],
}
