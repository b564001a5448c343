/**
 * The built-in Queclink @Track model: the standard AT commands of the @Track documents, each a
 * form asking for the device's password (every AT+GT command starts with it; its factory value is
 * the model's name in lower case, `gv300`, `gl300`, …, and fleets change it). `send.text` is the
 * whole command, `AT+GT<xxx>=<password>,…,<serial number>$`, sent as it is (command.ts):
 *
 *   AT+GTRTO=<password>,<sub command>,,,,,,<serial>$   real-time operation: 1 the position now
 *                                                     (answered +ACK:GTRTO then +RESP:GTRTL), 3 reboot,
 *                                                     8 the firmware version (+RESP:GTVER)
 *   AT+GTOUT=<password>,<output 1 status>,…$          digital output 1, which drives the
 *                                                     immobiliser relay on the GV300 family's wiring
 *
 * GTOUT's later fields (durations, outputs 2-4, the speed condition) are those of the GV300/GV350
 * documents; other models (GV55, GL300: no output) take another layout or none, and their owners
 * write their own model. The serial number FFFF is the documents' "any" value; the device echoes
 * it in its +ACK.
 */
import type { BuiltinField, BuiltinModel } from '../protocol'

const PASSWORD: BuiltinField = { name: 'password', type: 'password', label: 'Device password (gv300, gl300, … unless changed)', pattern: '[0-9A-Za-z]{4,6}' }

export const gl200Model: BuiltinModel = {
  id: 'a2e8e3ec-0a69-42b5-bb84-217f30704842',
  name: 'Queclink @Track (GV300, GL300, …)',
  commands: [
    {
      id: '5ee7ace7-6dee-446a-85e6-9d06b3503926',
      name: 'Position',
      widget: { type: 'form', fields: [PASSWORD] },
      send: { text: 'AT+GTRTO={password},1,,,,,,FFFF$' },
    },
    {
      id: 'bad8ada6-c1d3-41ef-be44-092518b9ab44',
      name: 'Engine stop',
      widget: { type: 'form', fields: [PASSWORD] },
      send: { text: 'AT+GTOUT={password},1,,,0,0,0,0,0,0,0,,,,,,,FFFF$' },
    },
    {
      id: 'b4c0da6e-c33f-4cd3-b692-aeaeb1fe280d',
      name: 'Engine resume',
      widget: { type: 'form', fields: [PASSWORD] },
      send: { text: 'AT+GTOUT={password},0,,,0,0,0,0,0,0,0,,,,,,,FFFF$' },
    },
    {
      id: '2b0ecae7-2bb2-476c-a661-90be214e5769',
      name: 'Reboot',
      widget: { type: 'form', fields: [PASSWORD] },
      send: { text: 'AT+GTRTO={password},3,,,,,,FFFF$' },
    },
    {
      id: '0f2df998-1969-4763-bd77-ddfbbb755541',
      name: 'Firmware version',
      widget: { type: 'form', fields: [PASSWORD] },
      send: { text: 'AT+GTRTO={password},8,,,,,,FFFF$' },
    },
  ],
}
