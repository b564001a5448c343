/**
 * The built-in Meitrack model: the commands of the Meitrack GPRS protocol documents (MVT/T1,
 * T333, T366, T622, "Command details"), as `send.text` is for Meitrack, `<command>[,<parameter>…]`
 * (command.ts puts the flag, the length, the IMEI and the checksum around it):
 * `A10` asks for the position now (answered by an AAA report with event 34); `C01,<speed>,<ABCDE>`
 * sets outputs 1-5 (1 on, 0 off, 2 unchanged) once the vehicle is below `speed` km/h (0: at once):
 * output 1 is the one the installation guides wire to the fuel or starter relay; `A12,<n>` reports
 * every n × 10 seconds; `F01` restarts the GSM module.
 */
import type { BuiltinModel } from '../protocol'

export const meitrackModel: BuiltinModel = {
  id: '97d3cb82-1487-4f66-895a-2266089cde81',
  name: 'Meitrack (T366, T333, MVT)',
  commands: [
    { id: '0f88dae6-e890-45d0-8a53-b70de24faacd', name: 'Position now', widget: { type: 'button', label: 'Ask for the position', confirm: false }, send: { text: 'A10' } },
    {
      id: '794ac7e5-0a2a-4d80-a203-754a7153311a',
      name: 'Engine stop',
      widget: { type: 'button', label: 'Stop engine', confirm: true, confirm_message: 'Output 1 (the fuel or starter relay) is switched on: the vehicle will stop. Continue?' },
      send: { text: 'C01,0,12222' },
    },
    {
      id: '6ee27efd-dc9c-4b5f-a9b8-1f28cc0aff05',
      name: 'Engine resume',
      widget: { type: 'button', label: 'Resume engine', confirm: true, confirm_message: 'Output 1 is switched off: the engine can start again. Continue?' },
      send: { text: 'C01,0,02222' },
    },
    {
      id: '8ef82dbf-40a6-46af-8f3f-84ebc802b9c2',
      name: 'Reporting interval',
      widget: { type: 'form', fields: [{ name: 'tens_of_seconds', type: 'number', label: 'Tens of seconds between positions (6 = one minute, 0 = off)', pattern: '[0-9]{1,5}' }] },
      send: { text: 'A12,{tens_of_seconds}' },
    },
    { id: '8cdffc4f-8b2d-49b0-aeed-e9cf17338135', name: 'Restart', widget: { type: 'button', label: 'Restart the GSM module', confirm: true, confirm_message: 'The device reconnects after its restart. Continue?' }, send: { text: 'F01' } },
  ],
}
