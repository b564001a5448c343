import { useSignal } from '@preact/signals'
import { useEffect, useRef } from 'preact/hooks'
import { now } from '../clock'
import type { FleetDevice } from '../fleet'
import { ago } from '../format'
import { deviceHref } from '../router'
import { strings } from '../strings'
import { StateMark } from './StateMark'

/** Height of a row in px (CSS .device-row matches it): the list draws only the rows in view. */
const ROW_PX = 60
const OVERSCAN = 8

export function DeviceList({ devices }: { devices: FleetDevice[] }) {
  const scroller = useRef<HTMLDivElement>(null)
  const scrollTop = useSignal(0)
  const height = useSignal(800)

  useEffect(() => {
    const el = scroller.current!
    const observer = new ResizeObserver(() => (height.value = el.clientHeight))
    observer.observe(el)
    return () => observer.disconnect()
  }, [])

  const first = Math.max(0, Math.floor(scrollTop.value / ROW_PX) - OVERSCAN)
  const last = Math.min(devices.length, Math.ceil((scrollTop.value + height.value) / ROW_PX) + OVERSCAN)
  const nowMs = now.value

  /** arrow keys move between rows, scrolling rows into being */
  function onKeyDown(event: KeyboardEvent) {
    if (event.key !== 'ArrowDown' && event.key !== 'ArrowUp') return
    const target = event.target as HTMLElement
    const index = Number(target.closest('li')?.dataset.index)
    if (!Number.isInteger(index)) return
    event.preventDefault()
    const next = Math.max(0, Math.min(devices.length - 1, index + (event.key === 'ArrowDown' ? 1 : -1)))
    const el = scroller.current!
    const top = next * ROW_PX
    if (top < el.scrollTop) el.scrollTop = top
    else if (top + ROW_PX > el.scrollTop + el.clientHeight) el.scrollTop = top + ROW_PX - el.clientHeight
    scrollTop.value = el.scrollTop
    requestAnimationFrame(() => el.querySelector<HTMLElement>(`li[data-index="${next}"] a`)?.focus())
  }

  return (
    <div ref={scroller} class="list-scroll" onScroll={(e) => (scrollTop.value = e.currentTarget.scrollTop)}>
      <ul class="device-list" aria-label={strings.listLabel} style={{ height: `${devices.length * ROW_PX}px` }} onKeyDown={onKeyDown}>
        {devices.slice(first, last).map((device, i) => {
          const index = first + i
          const fix = device.fix
          return (
            <li key={device.id} data-index={index} aria-setsize={devices.length} aria-posinset={index + 1} style={{ transform: `translateY(${index * ROW_PX}px)` }}>
              <a class="device-row" href={deviceHref(device.id)} data-device={device.id} data-state={device.state}>
                <StateMark state={device.state} course={device.state === 'moving' ? fix?.course : null} />
                <span class="row-main">
                  <span class="alias">{device.body.alias}</span>
                  <span class="row-sub">
                    <span class="state-text">{strings.states[device.state] ?? device.state}</span>
                    {fix?.speed != null && device.state === 'moving' && <span class="speed"> · {strings.speedKmh(fix.speed)}</span>}
                  </span>
                </span>
                <span class="age">
                  {fix ? (
                    <time dateTime={new Date(fix.timestamp * 1000).toISOString()}>{ago(fix.timestamp, nowMs)}</time>
                  ) : device.latitude === null ? (
                    strings.noPosition
                  ) : (
                    ''
                  )}
                </span>
              </a>
            </li>
          )
        })}
      </ul>
    </div>
  )
}
