/**
 * The built-in watch model: the commands the watch protocol documents give and watches agree on,
 * as `send.text` is for watches, `<command>[,<parameter>…]` (command.ts frames it): CR locates now
 * (the watch switches its GPS on and sends a position), UPLOAD,<seconds> sets the reporting
 * interval, SOS<n>,<phone> one of its three SOS numbers, MONITOR,<phone> calls a number back to
 * listen, FIND rings the watch, LZ,<language>,<time zone> sets its display, RESET reboots it and
 * POWEROFF turns it off.
 */
import type { BuiltinModel } from '../protocol'

const PHONE = '\\+?[0-9]{3,20}'

export const watchModel: BuiltinModel = {
  id: 'e356c98b-e483-4cfd-8593-f84814f855cd',
  name: 'Child and elder watch (SeTracker, 3G/4G)',
  commands: [
    { id: '7b34963d-488f-483a-b46f-527b3af2f560', name: 'Locate now', widget: { type: 'button', label: 'Locate now', confirm: false }, send: { text: 'CR' } },
    {
      id: '6538dff5-ca17-42f6-9985-0ca621beda87',
      name: 'Reporting interval',
      widget: { type: 'form', fields: [{ name: 'seconds', type: 'number', label: 'Seconds between positions', pattern: '[1-9][0-9]{0,4}' }] },
      send: { text: 'UPLOAD,{seconds}' },
    },
    {
      id: '0f8f2c73-98fe-4350-9dec-97102883d60f',
      name: 'SOS number',
      widget: {
        type: 'form',
        fields: [
          { name: 'slot', type: 'number', label: 'SOS number 1, 2 or 3', pattern: '[1-3]' },
          { name: 'phone', type: 'text', label: 'Phone number', pattern: PHONE },
        ],
      },
      send: { text: 'SOS{slot},{phone}' },
    },
    {
      id: '60675448-04e8-4302-8c8f-19329065068c',
      name: 'Call back',
      widget: { type: 'form', fields: [{ name: 'phone', type: 'text', label: 'Number the watch calls (to listen in)', pattern: PHONE }] },
      send: { text: 'MONITOR,{phone}' },
    },
    { id: '55687927-e010-45ff-9be9-e4ada7f14082', name: 'Find the watch', widget: { type: 'button', label: 'Ring the watch', confirm: false }, send: { text: 'FIND' } },
    {
      id: '0a51cc09-80d3-4885-9e60-2ed85b771a26',
      name: 'Language and time zone',
      widget: {
        type: 'form',
        fields: [
          { name: 'language', type: 'number', label: 'Language code (1 English, 0 Chinese, …)', pattern: '[0-9]{1,2}' },
          { name: 'zone', type: 'text', label: 'Time zone, hours from UTC (8, -5, 5.5)', pattern: '-?[0-9]{1,2}(\\.[0-9]{1,2})?' },
        ],
      },
      send: { text: 'LZ,{language},{zone}' },
    },
    { id: 'c06d3004-b6e9-42ac-9dc4-07377c46ff3c', name: 'Reboot', widget: { type: 'button', label: 'Reboot the watch', confirm: true, confirm_message: 'The watch restarts and is out of reach for a minute. Continue?' }, send: { text: 'RESET' } },
    { id: '3e174bd3-37cb-4acd-8b44-efe6e33f3cfd', name: 'Power off', widget: { type: 'button', label: 'Turn the watch off', confirm: true, confirm_message: 'The watch turns off and reports nothing until someone turns it on. Continue?' }, send: { text: 'POWEROFF' } },
  ],
}
