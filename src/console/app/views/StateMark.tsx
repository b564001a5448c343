import { STATE_GLYPH } from '../map'

/** The state's mark as on the map (colour and glyph), for lists and panels; the text beside it says the state. */
export function StateMark({ state, course }: { state: string; course?: number | null }) {
  return (
    <span class={`mk state-${state} inline-mk`} aria-hidden="true">
      {course !== null && course !== undefined && <span class="mk-arrow" style={{ transform: `rotate(${Math.round(course)}deg)` }} />}
      <span class="mk-dot">{STATE_GLYPH[state] ?? ''}</span>
    </span>
  )
}
