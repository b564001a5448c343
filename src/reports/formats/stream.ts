/**
 * Text pieces to a byte stream, produced as the reader pulls: a writer is an async generator of
 * strings (it pulls rows in turn), and nothing runs ahead of the reader by more than one batch.
 */

import type { ReportRow } from '../types'

/** Pieces are joined into batches of about this many UTF-16 units before encoding. */
const BATCH_CHARS = 64 * 1024

/** A document's rows as one async iterator; `return` closes them (later calls do nothing). */
export interface DocumentRows extends AsyncIterableIterator<ReportRow> {
  return(): Promise<IteratorResult<ReportRow>>
}

/**
 * The rows of a document, sync or async, as one async iterator, taken at once: a body cancelled
 * before it read a row still closes them (a report's rows give back the history slot they hold).
 */
export function rowsOf(rows: Iterable<ReportRow> | AsyncIterable<ReportRow>): DocumentRows {
  const iterator: Iterator<ReportRow> | AsyncIterator<ReportRow> = Symbol.asyncIterator in rows ? rows[Symbol.asyncIterator]() : rows[Symbol.iterator]()
  const done: IteratorResult<ReportRow> = { done: true, value: undefined }
  let closed = false
  return {
    next: async () => (closed ? done : iterator.next()),
    async return() {
      if (!closed) {
        closed = true
        await iterator.return?.()
      }
      return done
    },
    [Symbol.asyncIterator]() {
      return this
    },
  }
}

/** `rows`, when given, are closed when the reader cancels (whether or not a piece was pulled). */
export function textStream(pieces: () => AsyncGenerator<string>, rows?: DocumentRows): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  let iterator: AsyncGenerator<string> | null = null
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        iterator ??= pieces()
        let batch = ''
        while (batch.length < BATCH_CHARS) {
          const next = await iterator.next()
          if (next.done) {
            if (batch) controller.enqueue(encoder.encode(batch))
            controller.close()
            return
          }
          batch += next.value
        }
        controller.enqueue(encoder.encode(batch))
      },
      async cancel() {
        await iterator?.return(undefined)
        await rows?.return()
      },
    },
    { highWaterMark: 0 },
  )
}
