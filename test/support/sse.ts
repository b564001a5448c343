/** Reads server-sent events from a response body, one block (an event or a comment) at a time. */
export function sseBlocks(res: Response) {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  const blocks = {
    /** the next block, or null when the stream ended; throws when none comes within `timeoutMs` */
    async next(timeoutMs = 2000): Promise<string | null> {
      const deadline = Date.now() + timeoutMs
      while (!buffer.includes('\n\n')) {
        const chunk = await Promise.race([reader.read(), Bun.sleep(Math.max(0, deadline - Date.now())).then(() => 'timeout' as const)])
        if (chunk === 'timeout') throw new Error(`no event within ${timeoutMs} ms`)
        if (chunk.done) return null
        buffer += chunk.value
      }
      const end = buffer.indexOf('\n\n')
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      return block
    },
    /** the next block that `matches`, the others passed over; throws when the stream ends first */
    async until(matches: (block: string) => boolean, timeoutMs = 2000): Promise<string> {
      for (;;) {
        const block = await blocks.next(timeoutMs)
        if (block === null) throw new Error('the stream ended')
        if (matches(block)) return block
      }
    },
    cancel: () => reader.cancel(),
  }
  return blocks
}
