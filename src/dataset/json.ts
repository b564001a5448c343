/**
 * Reading an import file as JSON, and saying where it stops being JSON when it does not parse:
 * the runtime's JSON.parse says what it expected but not where, and a CSV or a hand-edited file
 * needs the line and column of the first bad character. The scan runs only after JSON.parse has
 * failed, so the common case costs nothing; it walks the RFC 8259 grammar with an explicit stack
 * (no recursion: a deeply nested file cannot overflow it).
 */

/** The file is not JSON: where (1-based line and column, in characters) and what was found there. */
export class NotJson extends Error {
  constructor(
    readonly file: string,
    readonly line: number | null,
    readonly column: number | null,
    readonly found: string,
  ) {
    super(
      `not JSON: the import format is JSON (docs/import-format.md); ${file}` +
        (line === null ? `: ${found}` : `, line ${line}, column ${column}: ${found}`),
    )
    this.name = 'NotJson'
  }
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r'])
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't'])
const HEX = /^[0-9a-fA-F]$/
const DIGIT = /^[0-9]$/

/** The offset (UTF-16) of the first character at which `text` stops being JSON; `text.length` when it ends too early; null when it is JSON. */
export function firstNonJsonOffset(text: string): number | null {
  const n = text.length
  let i = 0
  const stack: ('{' | '[')[] = []
  const skipWhitespace = () => {
    while (i < n && WHITESPACE.has(text[i]!)) i++
  }
  const digits = (): boolean => {
    if (!DIGIT.test(text[i] ?? '')) return false
    while (DIGIT.test(text[i] ?? '')) i++
    return true
  }
  /** a string from its opening quote at i; false with i at the bad character */
  const string = (): boolean => {
    i++
    while (i < n) {
      const c = text[i]!
      if (c === '"') {
        i++
        return true
      }
      if (c === '\\') {
        const next = text[i + 1]
        if (next !== undefined && ESCAPES.has(next)) i += 2
        else if (next === 'u') {
          i += 2
          for (let k = 0; k < 4; k++, i++) if (!HEX.test(text[i] ?? '')) return false
        } else {
          i++
          return false
        }
      } else if (c.charCodeAt(0) < 0x20) return false
      else i++
    }
    return false
  }
  /** a string, number or literal at i */
  const scalar = (): boolean => {
    const c = text[i]
    if (c === '"') return string()
    if (c === '-' || DIGIT.test(c ?? '')) {
      if (c === '-') i++
      if (text[i] === '0') i++
      else if (!digits()) return false
      if (text[i] === '.') {
        i++
        if (!digits()) return false
      }
      if (text[i] === 'e' || text[i] === 'E') {
        i++
        if (text[i] === '+' || text[i] === '-') i++
        if (!digits()) return false
      }
      return true
    }
    for (const literal of ['true', 'false', 'null']) {
      if (c !== literal[0]) continue
      for (const expected of literal) {
        if (text[i] !== expected) return false
        i++
      }
      return true
    }
    return false
  }

  let expect: 'value' | 'key' | 'after' = 'value'
  for (;;) {
    skipWhitespace()
    if (expect === 'value') {
      const c = text[i]
      if (c === '{' || c === '[') {
        stack.push(c)
        i++
        skipWhitespace()
        if (text[i] === (c === '{' ? '}' : ']')) {
          i++
          stack.pop()
          expect = 'after'
        } else expect = c === '{' ? 'key' : 'value'
      } else if (scalar()) expect = 'after'
      else return i
    } else if (expect === 'key') {
      if (text[i] !== '"' || !string()) return i
      skipWhitespace()
      if (text[i] !== ':') return i
      i++
      expect = 'value'
    } else {
      const top = stack.at(-1)
      if (top === undefined) return i < n ? i : null
      const c = text[i]
      if (c === ',') {
        i++
        expect = top === '{' ? 'key' : 'value'
      } else if (c === (top === '{' ? '}' : ']')) {
        i++
        stack.pop()
      } else return i
    }
  }
}

/** `text` as JSON; NotJson naming the line and column of the first bad character. */
export function parseJsonFile(text: string, file: string): unknown {
  try {
    return JSON.parse(text)
  } catch (error) {
    const offset = firstNonJsonOffset(text)
    // JSON by the grammar, yet refused (nested too deep for the runtime): its own words
    if (offset === null) throw new NotJson(file, null, null, (error as Error).message)
    const before = text.slice(0, offset)
    const lineStart = before.lastIndexOf('\n') + 1
    const line = before.split('\n').length
    const column = [...text.slice(lineStart, offset)].length + 1
    const char = offset < text.length ? String.fromCodePoint(text.codePointAt(offset)!) : ''
    // an invisible character (a byte-order mark, a control character) is named by its code point
    const shown = /^[\p{L}\p{N}\p{P}\p{S}]$/u.test(char) ? JSON.stringify(char) : `U+${char.codePointAt(0)?.toString(16).toUpperCase().padStart(4, '0')}`
    const found = char === '' ? 'the file ends too early' : `unexpected ${shown}`
    throw new NotJson(file, line, column, found)
  }
}
