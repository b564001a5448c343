import { type ReadonlySignal, signal } from '@preact/signals'

/** Whether a CSS media query matches, kept up to date (the console's breakpoints as styles.css has them). */
export function mediaMatches(query: string): ReadonlySignal<boolean> {
  const list = window.matchMedia(query)
  const matches = signal(list.matches)
  list.addEventListener('change', (event) => (matches.value = event.matches))
  return matches
}
