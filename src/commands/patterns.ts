/**
 * A form field's `pattern`: a regular expression (JavaScript syntax, `u` flag) that the whole value
 * must match, as HTML's `pattern` attribute does. It says what a field takes (`[0-9]{1,5}` for
 * seconds), and it is the only way a value may carry the protocol's separators (sending.ts).
 *
 * Patterns are written by account admins and matched against values that any member sends, in the
 * one process every account shares, so a pattern that could backtrack for seconds on a crafted
 * value (`(a+)+$`) is refused when the model is written (redos-detector scores how many ways a
 * value could match; more than one way per character is refused), and again when a command is sent
 * (a pattern stored before this check existed). Verdicts are kept, so each pattern costs its
 * analysis once.
 */
import { LRUCache } from 'lru-cache'
import { isSafePattern } from 'redos-detector'
import type { FieldError } from '../errors'

/** the longest pattern a field may declare, in characters */
export const MAX_PATTERN_LENGTH = 200
/** different patterns one model may declare: a new pattern costs its analysis (a few ms; one refused, up to ~0.1 s) */
export const MAX_PATTERNS_PER_MODEL = 16
/**
 * The analysis's step budget: a pattern it cannot prove safe within it is refused. Counted in
 * steps, not time, so that the verdict is the same on a busy machine. Patterns people write for
 * form fields (digits, an APN, a host name) take 6 to ~400 steps.
 */
const CHECK_MAX_STEPS = 600

export type FieldPattern = { ok: true; regex: RegExp } | { ok: false; reason: string }

const verdicts = new LRUCache<string, FieldPattern>({ max: 2000 })

/** The pattern as a whole-value matcher, or why it is refused (never thrown: a stored pattern may be bad). */
export function fieldPattern(source: string): FieldPattern {
  const known = verdicts.get(source)
  if (known) return known
  const verdict = judge(source)
  verdicts.set(source, verdict)
  return verdict
}

function judge(source: string): FieldPattern {
  if (source.length === 0 || source.length > MAX_PATTERN_LENGTH) return { ok: false, reason: `must be 1 to ${MAX_PATTERN_LENGTH} characters` }
  try {
    // alone first: `)|(.*` would otherwise escape the anchors put around it
    new RegExp(source, 'u')
  } catch (error) {
    return { ok: false, reason: `is not a regular expression: ${(error as Error).message}` }
  }
  const whole = `^(?:${source})$`
  let safe: boolean
  try {
    safe = isSafePattern(whole, { unicode: true, maxSteps: CHECK_MAX_STEPS, timeout: Number.POSITIVE_INFINITY }).safe
  } catch {
    // a construct the analysis does not know (lookbehind, named groups in some forms): not proven safe
    safe = false
  }
  if (!safe) {
    return {
      ok: false,
      reason: 'could make matching a value slow (a repetition inside a repetition, or alternatives that overlap): write it so that a value can match only one way',
    }
  }
  return { ok: true, regex: new RegExp(whole, 'u') }
}

/** The fields of a widget that declare a pattern, with where each is in the widget. */
function declaredPatterns(widget: unknown): { index: number; pattern: unknown }[] {
  const fields = (widget as { fields?: unknown } | null)?.fields
  if (!Array.isArray(fields)) return []
  return fields.flatMap((field, index) =>
    field !== null && typeof field === 'object' && Object.hasOwn(field, 'pattern') ? [{ index, pattern: (field as { pattern: unknown }).pattern }] : [],
  )
}

/**
 * The problems of the patterns a model's commands declare, each at its path
 * (`<base>/<i>/widget/fields/<j>/pattern`): not a string, not a regular expression, too slow to
 * match, or more distinct patterns than one change may bring.
 */
export function patternProblems(commands: readonly { widget: unknown }[], base: string): FieldError[] {
  const errors: FieldError[] = []
  const seen = new Set<string>()
  commands.forEach((command, i) => {
    for (const { index, pattern } of declaredPatterns(command.widget)) {
      const path = `${base}/${i}/widget/fields/${index}/pattern`
      if (typeof pattern !== 'string') {
        errors.push({ path, message: 'must be a string (a regular expression the whole value must match)' })
        continue
      }
      if (!seen.has(pattern) && seen.size === MAX_PATTERNS_PER_MODEL) {
        errors.push({ path, message: `is one pattern too many: a model declares at most ${MAX_PATTERNS_PER_MODEL} different patterns` })
        continue
      }
      seen.add(pattern)
      const verdict = fieldPattern(pattern)
      if (!verdict.ok) errors.push({ path, message: verdict.reason })
    }
  })
  return errors
}
