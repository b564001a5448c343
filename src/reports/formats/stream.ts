/**
 * Text pieces to a byte stream, produced as the reader pulls: a writer is an async generator of
 * strings (it pulls rows in turn), and nothing runs ahead of the reader by more than one batch.
 */

import type { ReportRow } from '../types'

/** Pieces are joined into batches of about this many UTF-16 units before encoding. */
const BATCH_CHARS = 64 * 1024

/** The rows of a document, sync or async, as one async iterator. */
export async function* rowsOf(rows: Iterable<ReportRow> | AsyncIterable<ReportRow>): AsyncGenerator<ReportRow> {
  for await (const row of rows) yield row
}

export function textStream(pieces: () => AsyncGenerator<string>): ReadableStream<Uint8Array> {
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
      },
    },
    { highWaterMark: 0 },
  )
}
