/** Hand-built report documents and readers for the file writers' tests. */

import type { ReportColumn, ReportDocument, ReportRow } from '../../../src/reports/types'

export const utc = (year: number, month: number, day: number, hour = 0, minute = 0, second = 0) =>
  Date.UTC(year, month - 1, day, hour, minute, second) / 1000

export function column(key: string, type: ReportColumn['type'], title = key): ReportColumn {
  return { key, type, title }
}

export function document(fields: Partial<ReportDocument> & Pick<ReportDocument, 'kind' | 'columns' | 'rows'>): ReportDocument {
  return {
    totals: null,
    period: { from: utc(2026, 10, 24, 22), to: utc(2026, 11, 2, 23) },
    tz: 'Europe/Paris',
    generatedAt: utc(2026, 11, 3, 6),
    ...fields,
  }
}

export async function* asyncRows(rows: ReportRow[]): AsyncGenerator<ReportRow> {
  for (const row of rows) {
    await Promise.resolve()
    yield row
  }
}

export async function bytesOf(body: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(body).arrayBuffer())
}

export async function textOf(body: ReadableStream<Uint8Array>): Promise<string> {
  return new TextDecoder('utf-8', { fatal: true }).decode(await bytesOf(body))
}

/** A parsed XML element: enough of XML to check the GPX and KML writers' output. */
export interface XmlElement {
  name: string
  attributes: Record<string, string>
  children: XmlElement[]
  text: string
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }
const unescape = (text: string) =>
  text.replace(/&(\w+);/g, (whole, name: string) => {
    if (!(name in ENTITIES)) throw new Error(`unknown entity ${whole}`)
    return ENTITIES[name]
  })

/** Parses well-formed XML (no DTD, CDATA or comments); throws on a tag closed out of order or a stray `<`/`&`. */
export function parseXml(source: string): XmlElement {
  const body = source.replace(/^<\?xml[^?]*\?>\s*/, '')
  const root: XmlElement = { name: '#document', attributes: {}, children: [], text: '' }
  const stack = [root]
  const tag = /<(\/?)([\w:.-]+)((?:\s+[\w:.-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy
  let match: RegExpExecArray | null
  let at = 0
  while (at < body.length) {
    tag.lastIndex = at
    match = tag.exec(body)
    if (!match) throw new Error(`not XML at ${at}: ${body.slice(at, at + 40)}`)
    at = tag.lastIndex
    const [, closing, name, attributeText, selfClosing, text] = match
    const top = stack[stack.length - 1]
    if (text !== undefined) {
      if (text.includes('&') && /&(?!\w+;)/.test(text)) throw new Error(`stray & in ${text}`)
      top.text += unescape(text)
    } else if (closing) {
      if (top.name !== name) throw new Error(`</${name}> closes <${top.name}>`)
      stack.pop()
    } else {
      const attributes: Record<string, string> = {}
      for (const [, key, value] of attributeText.matchAll(/([\w:.-]+)="([^"]*)"/g)) attributes[key] = unescape(value)
      const element: XmlElement = { name, attributes, children: [], text: '' }
      top.children.push(element)
      if (!selfClosing) stack.push(element)
    }
  }
  if (stack.length !== 1 || root.children.length !== 1) throw new Error('unbalanced XML')
  return root.children[0]
}

export const childrenNamed = (element: XmlElement, name: string) => element.children.filter((c) => c.name === name)
export const childNamed = (element: XmlElement, name: string) => {
  const found = childrenNamed(element, name)
  if (found.length !== 1) throw new Error(`${element.name} has ${found.length} <${name}>`)
  return found[0]
}
