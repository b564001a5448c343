/**
 * The notices stack and the live region that reads each notice out. Alarms come first, then
 * passing news, newest first within each; at most STACKED show (two on a phone, so the map stays
 * in sight), then "+N more" opens the rest in place. An alarm has an Acknowledge button, passing
 * news a × (it fades by itself); Escape while focus is in a notice does the same, and focus then
 * moves to the next notice, or to the page's content when none is left, so a keyboard user is
 * never dropped. Where the stack sits is the Shell's and styles.css's: a column of its own beside
 * a page with tables on a desktop, over the map on the live map, across the bottom on a phone.
 */
import { useSignal } from '@preact/signals'
import { now } from './clock'
import { eventName } from './eventNames'
import { iso, when } from './format'
import type { NoticeBoard } from './noticeBoard'
import { mediaMatches } from './media'
import { isUrgent, STACKED, stack, type Notice } from './notices'
import { deviceHref } from './router'
import { strings } from './strings'

/** Notices stacked on a phone (as styles.css's phone breakpoint). */
const STACKED_ON_PHONE = 2
const onPhone = mediaMatches('(max-width: 799px)')

function focusAfterDismiss(next: number | null) {
  // after Preact has redrawn the stack
  requestAnimationFrame(() => {
    const target = next === null ? null : document.querySelector<HTMLElement>(`[data-notice="${next}"] .notice-close`)
    ;(target ?? document.getElementById('content'))?.focus()
  })
}

function NoticeCard({ board, notice, next }: { board: NoticeBoard; notice: Notice; next: number | null }) {
  board.fleet.version.value // the device's name once the list has loaded (a notice kept over a reload comes first)
  const { alarm } = notice
  const name = eventName(alarm.alarm_code, alarm.context)
  const alias = board.aliasOf(alarm.id)
  const isAlarm = notice.kind === 'alarm'
  const dismiss = (moveFocus: boolean) => {
    board.dismiss(notice.key)
    if (moveFocus) focusAfterDismiss(next)
  }
  return (
    <li
      class={`notice ${notice.kind}${isUrgent(alarm.alarm_code) ? ' urgent' : ''}`}
      data-notice={notice.key}
      data-device={alarm.id}
      onKeyDown={(e) => {
        if (e.key !== 'Escape') return
        e.preventDefault()
        dismiss(true)
      }}
    >
      <span class="notice-icon" aria-hidden="true">
        {isAlarm ? '!' : 'i'}
      </span>
      <div class="notice-body">
        <p class="notice-title">{name}</p>
        <p class="notice-meta">
          <span class="notice-alias">{alias}</span> · <time dateTime={iso(alarm.timestamp)}>{when(alarm.timestamp * 1000, now.value)}</time>
        </p>
        <div class="notice-actions">
          <a class="notice-link" href={deviceHref(alarm.id)} onClick={() => !isAlarm && dismiss(false)}>
            {strings.noticeShow}
          </a>
          {isAlarm && (
            <button type="button" class="notice-close notice-ack" aria-label={strings.noticeAcknowledgeLabel(name, alias)} title={strings.noticeAcknowledgeTitle} onClick={() => dismiss(true)}>
              {strings.noticeAcknowledge}
            </button>
          )}
        </div>
      </div>
      {!isAlarm && (
        <button type="button" class="notice-close" aria-label={strings.noticeDismiss(name, alias)} title={strings.noticeDismissTitle} onClick={() => dismiss(true)}>
          <span aria-hidden="true">×</span>
        </button>
      )}
    </li>
  )
}

export function Notices({ board }: { board: NoticeBoard }) {
  board.fleet.version.value // names fill in once the list has loaded
  const expanded = useSignal(false)
  const notices = board.state.value.notices
  const all = stack(notices, notices.length).shown
  const limit = onPhone.value ? STACKED_ON_PHONE : STACKED
  const open = expanded.value && notices.length > limit
  const { shown, more } = open ? { shown: all, more: 0 } : stack(notices, limit)
  return (
    <>
      <p class="sr-only" aria-live="assertive" aria-atomic="true">
        {board.announcement.value}
      </p>
      {notices.length > 0 && (
        <section class={open ? 'notices expanded' : 'notices'} aria-label={strings.noticesLabel}>
          <ol>
            {shown.map((notice, i) => (
              <NoticeCard key={notice.key} board={board} notice={notice} next={(shown[i + 1] ?? shown[i - 1] ?? null)?.key ?? null} />
            ))}
          </ol>
          {notices.length > 1 && (
            <div class="notices-foot">
              {more > 0 ? (
                <button type="button" class="link notices-more" aria-expanded="false" onClick={() => (expanded.value = true)}>
                  {strings.noticesMore(more)}
                </button>
              ) : (
                open && (
                  <button type="button" class="link notices-more" aria-expanded="true" onClick={() => (expanded.value = false)}>
                    {strings.noticesFewer}
                  </button>
                )
              )}
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
