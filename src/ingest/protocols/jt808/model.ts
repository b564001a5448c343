/**
 * The built-in JT/T 808 model: the standard's own commands, in the text form command.ts reads.
 * `8201` asks for the position (the answer is a fix), `8105:4` resets the terminal, `8105:5`
 * restores its factory settings, `8103:0029=<s>` sets the default reporting interval (parameter
 * 0x0029), `8300:<text>` sends a text message. The standard has no engine stop (0x8500 controls
 * the doors, and firmware differs in what it does with it): none is offered; a model of one's own
 * may send a maker's command as a text message.
 */
import type { BuiltinModel } from '../protocol'

export const jt808Model: BuiltinModel = {
  id: 'c537678f-ed1a-4806-a924-ef58d8373f18',
  name: 'JT/T 808',
  commands: [
    { id: 'cf535c8c-26ae-4a9e-b25a-7b00a6f880d6', name: 'Position', widget: { type: 'button', label: 'Ask for the position', confirm: false }, send: { text: '8201' } },
    {
      id: '610d5375-cead-45e5-8373-0a1ad1a4acdd',
      name: 'Reboot',
      widget: { type: 'button', label: 'Reboot the tracker', confirm: true, confirm_message: 'The tracker restarts and is offline for a minute. Continue?' },
      send: { text: '8105:4' },
    },
    {
      id: '4ad22bdf-b467-490b-84ce-f724c6c5aee0',
      name: 'Factory reset',
      widget: { type: 'button', label: 'Restore factory settings', confirm: true, confirm_message: 'Every setting of the tracker, its server address included, goes back to the factory value. Continue?' },
      send: { text: '8105:5' },
    },
    {
      id: 'f59ef1ba-499e-452f-b024-47d69f9ccdf1',
      name: 'Reporting interval',
      widget: { type: 'form', fields: [{ name: 'seconds', type: 'number', label: 'Seconds between positions', pattern: '[1-9][0-9]{0,4}' }] },
      send: { text: '8103:0029={seconds}' },
    },
    {
      id: '053da018-c4f2-4e5a-8300-0bf32da3cc81',
      name: 'Text message',
      widget: { type: 'form', fields: [{ name: 'text', type: 'text', label: 'Text', pattern: '[\\x20-\\x7e]{1,128}' }] },
      send: { text: '8300:{text}' },
    },
  ],
}
