/**
 * What a command's form values must be, and the text they make: pure functions, no I/O.
 *
 * The values are checked against the command's widget (every field present, no other, a string
 * of at most MAX_VALUE_LENGTH characters without control characters, a `number` field a JSON
 * number, a field with a `pattern` matching it whole, patterns.ts) and against the protocol's
 * separators (a value holding one, GT06's `#` or `,` say, would send more than its field: another
 * parameter, another command; refused unless the field's pattern allows it), then put into
 * `send.text` where it says `{field}`. Two texts come out: the one the
 * device receives, and the one everybody else is shown, where every `password` field's value is
 * `***` (and so is any other occurrence of a password's value, which would otherwise give it away).
 */
import { Conflict, type FieldError, Invalid } from '../errors'
import { fieldPattern } from './patterns'

/** the longest value of one form field, in characters (code points) */
export const MAX_VALUE_LENGTH = 128
/** what a password field's value is shown as */
export const MASK = '***'
/** C0 and C1 control characters and DEL: a device reads some of them as the end of a command */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

export interface WidgetField {
  name: string
  type: string
  /** a regular expression the whole value must match (patterns.ts); null: none declared */
  pattern: string | null
  /**
   * The widget's `required`: true, the value must not be empty (an empty APN would send `APN,#`);
   * false, it may be left out or empty, and is then never sent (renderCommand); absent, as before
   * it was declared: present, possibly empty, put in as it is.
   */
  required: boolean | null
}

/** The fields a widget asks for: a button none; a form (or any widget with `fields`) its named fields. */
export function widgetFields(widget: unknown): WidgetField[] {
  const fields = (widget as { fields?: unknown } | null)?.fields
  if (!Array.isArray(fields)) return []
  return fields
    .filter((f): f is { name: string; type?: unknown; pattern?: unknown; required?: unknown } => typeof (f as { name?: unknown } | null)?.name === 'string')
    .map((f) => ({
      name: f.name,
      type: typeof f.type === 'string' ? f.type : 'text',
      pattern: typeof f.pattern === 'string' ? f.pattern : null,
      required: typeof f.required === 'boolean' ? f.required : null,
    }))
}

/** a field name as a JSON pointer segment (RFC 6901) */
const pointer = (name: string) => `/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`

/** the separators as a message names them: "#" or "," */
const quoted = (separators: readonly string[]) => separators.map((s) => JSON.stringify(s)).join(' or ')

/**
 * The body's values as text, by field name, or Invalid naming every field at fault. A missing
 * body counts as `{}` (a button). `separators` are the protocol's (its descriptor's
 * commandSeparators): a value holding one is refused unless its field's pattern matches it.
 * Values are never quoted back in a message: one may be a password. A field whose stored pattern
 * is refused (patterns.ts) makes the command unsendable: Conflict.
 */
export function checkValues(fields: readonly WidgetField[], body: unknown, separators: readonly string[] = []): Map<string, string> {
  const given = body === null || body === undefined ? {} : body
  if (typeof given !== 'object' || Array.isArray(given)) {
    throw new Invalid('The body must be a JSON object of the form\'s values ({} for a button)', [{ path: '', message: 'must be an object' }])
  }
  const values = given as Record<string, unknown>
  const errors: FieldError[] = []
  const text = new Map<string, string>()
  const known = new Set(fields.map((f) => f.name))
  for (const field of fields) {
    const path = pointer(field.name)
    const value = values[field.name]
    const empty = value === undefined || value === null || value === ''
    if (field.required === false && empty) continue // left out: never sent
    if (!Object.hasOwn(values, field.name)) {
      errors.push({ path, message: 'is required' })
      continue
    }
    if (field.required === true && value === '') {
      errors.push({ path, message: 'is required: must not be empty' })
      continue
    }
    if (field.type === 'number') {
      if (typeof value !== 'number' || !Number.isFinite(value)) errors.push({ path, message: 'must be a number' })
      else text.set(field.name, String(value))
    } else if (typeof value !== 'string') errors.push({ path, message: 'must be a string' })
    else if ([...value].length > MAX_VALUE_LENGTH) errors.push({ path, message: `must be at most ${MAX_VALUE_LENGTH} characters` })
    else if (CONTROL.test(value)) errors.push({ path, message: 'must not contain control characters' })
    else text.set(field.name, value)
    const entered = text.get(field.name)
    if (entered === undefined) continue
    if (field.pattern !== null) {
      const pattern = fieldPattern(field.pattern)
      if (!pattern.ok) throw new Conflict(`The command cannot be sent: the pattern of its field "${field.name}" ${pattern.reason}; its model must be corrected`)
      // the pattern says what the field takes, separators included
      if (!pattern.regex.test(entered)) {
        text.delete(field.name)
        errors.push({ path, message: `must match the field's pattern ${field.pattern}` })
      }
      continue
    }
    const found = separators.filter((separator) => entered.includes(separator))
    if (found.length > 0) {
      text.delete(field.name)
      errors.push({
        path,
        message: `must not contain ${quoted(found)}: this device's protocol splits its commands on ${quoted(separators)}, so the value would send more than this field`,
      })
    }
  }
  for (const name of Object.keys(values)) {
    if (!known.has(name)) errors.push({ path: pointer(name), message: fields.length === 0 ? 'is not a field: this command takes none ({})' : 'is not a field of this command' })
  }
  if (errors.length > 0) throw new Invalid(errors.map((e) => `${e.path} ${e.message}`).join('; '), errors)
  return text
}

/**
 * `{name}` in a command's text, a form field's place (other braces stay as written), with the
 * separator before it, if any: what an optional field left empty takes away
 */
const OMITTABLE = /([,;:| ]?)\{([^{}]*)\}/g

export interface RenderedCommand {
  /** what the device receives */
  text: string
  /** what is shown: password values as *** */
  shown: string
  /** the non-empty password values, longest first: masked wherever they would show again (a device's answer) */
  secrets: string[]
}

/**
 * `template` with each `{field}` replaced by that field's value, in one pass (a value holding
 * `{x}` is not expanded again); a `{word}` that names no field stays as written. An optional
 * field (`required: false`) left empty is never sent: its place goes, with the one separator
 * (`,`, `;`, space, …) just before it, so `APN,{apn},{user}#` without a user sends `APN,internet#`.
 */
export function renderCommand(template: string, fields: readonly WidgetField[], values: ReadonlyMap<string, string>): RenderedCommand {
  const passwords = new Set(fields.filter((f) => f.type === 'password').map((f) => f.name))
  const omitted = new Set(fields.filter((f) => f.required === false && (values.get(f.name) ?? '') === '').map((f) => f.name))
  const fill = (masked: boolean) =>
    template.replace(OMITTABLE, (whole, separator: string, name: string) => {
      if (omitted.has(name)) return ''
      const value = values.get(name)
      if (value === undefined) return whole
      return separator + (masked && passwords.has(name) ? MASK : value)
    })
  const secrets = [...new Set([...passwords].map((name) => values.get(name) ?? '').filter((v) => v !== ''))].sort((a, b) => b.length - a.length)
  return { text: fill(false), shown: maskSecrets(fill(true), secrets), secrets }
}

/** `text` with every occurrence of each secret replaced by *** */
export function maskSecrets(text: string, secrets: readonly string[]): string {
  let masked = text
  for (const secret of secrets) if (secret !== '') masked = masked.split(secret).join(MASK)
  return masked
}
