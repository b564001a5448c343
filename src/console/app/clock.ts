/** The time the console shows ages against: it moves every 15 s, so "2 min ago" stays true without a request. */
import { signal } from '@preact/signals'

export const now = signal(Date.now())
setInterval(() => {
  now.value = Date.now()
}, 15_000)
