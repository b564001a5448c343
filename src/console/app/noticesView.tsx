/**
 * The notices stack (newest on top) and the live region that reads each alarm out. A notice is
 * dismissed with its button, or with Escape while focus is in it; focus then moves to the next
 * notice, or to the page's content when none is left, so a keyboard user is never dropped.
 */
import { now } from './clock'
import { iso, when } from './format'
import { eventName } from './eventNames'
import { isUrgent, type Notice, type NoticeBoard } from './notices'
import { deviceHref } from './router'
import { strings } from './strings'

/** Notices shown at once; the rest wait behind them (and are on the Events page). */
const VISIBLE = 3

function focusAfterDismiss(next: number | null) {
  // after Preact has redrawn the stack
  requestAnimationFrame(() => {
    const target = next === null ? null : document.querySelector<HTMLElement>(`[data-notice="${next}"] .notice-close`)
    ;(target ?? document.getElementById('content'))?.focus()
  })
}

function NoticeCard({ board, notice, next }: { board: NoticeBoard; notice: Notice; next: number | null }) {
  const { alarm } = notice
  const name = eventName(alarm.alarm_code, alarm.context)
  const alias = board.aliasOf(alarm.id)
  const dismiss = (moveFocus: boolean) => {
    board.dismiss(notice.key)
    if (moveFocus) focusAfterDismiss(next)
  }
  return (
    <li
      class={isUrgent(alarm.alarm_code) ? 'notice urgent' : 'notice'}
      data-notice={notice.key}
      data-device={alarm.id}
      onKeyDown={(e) => {
        if (e.key !== 'Escape') return
        e.preventDefault()
        dismiss(true)
      }}
    >
      <span class="notice-icon" aria-hidden="true">
        !
      </span>
      <div class="notice-body">
        <p class="notice-title">{name}</p>
        <p class="notice-meta">
          <span class="notice-alias">{alias}</span> · <time dateTime={iso(alarm.timestamp)}>{when(alarm.timestamp * 1000, now.value)}</time>
        </p>
        <a class="notice-link" href={deviceHref(alarm.id)} onClick={() => dismiss(false)}>
          {strings.noticeShow}
        </a>
      </div>
      <button type="button" class="notice-close" aria-label={strings.noticeDismiss(name, alias)} title={strings.noticeDismissTitle} onClick={() => dismiss(true)}>
        <span aria-hidden="true">×</span>
      </button>
    </li>
  )
}

export function Notices({ board }: { board: NoticeBoard }) {
  board.fleet.version.value // names fill in once the list has loaded
  const notices = board.notices.value
  const shown = notices.slice(0, VISIBLE)
  const waiting = notices.length - shown.length
  return (
    <>
      <p class="sr-only" aria-live="assertive" aria-atomic="true">
        {board.announcement.value}
      </p>
      {notices.length > 0 && (
        <section class="notices" aria-label={strings.noticesLabel}>
          <ol>
            {shown.map((notice, i) => (
              <NoticeCard key={notice.key} board={board} notice={notice} next={(notices[i + 1] ?? notices[i - 1] ?? null)?.key ?? null} />
            ))}
          </ol>
          {notices.length > 1 && (
            <div class="notices-foot">
              {waiting > 0 && <span>{strings.noticesMore(waiting)}</span>}
              <a href="#/events">{strings.noticesOpenEvents}</a>
              <button
                type="button"
                class="link"
                onClick={() => {
                  board.dismissAll()
                  focusAfterDismiss(null)
                }}
              >
                {strings.noticesDismissAll}
              </button>
            </div>
          )}
        </section>
      )}
    </>
  )
}
