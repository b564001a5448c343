import { useSignal } from '@preact/signals'
import { useEffect, useMemo } from 'preact/hooks'
import { forgetFilters } from '../filters'
import { Fleet } from '../fleet'
import { mediaMatches } from '../media'
import { NoticeBoard } from '../noticeBoard'
import { Notices } from '../noticesView'
import { route } from '../router'
import { signOut } from '../session'
import { strings } from '../strings'
import type { Me } from '../types'
import { EventsView } from './EventsView'
import { HistoryView } from './HistoryView'
import { LiveView } from './LiveView'
import { AdminView } from './AdminView'
import { ChangePassword } from './ChangePassword'
import { EmailAlerts } from './EmailAlerts'
import { NotYet } from './NotYet'
import { ShareView } from './ShareView'
import { OwnTimeZone } from './OwnTimeZone'
import { ReportsView } from './ReportsView'
import { forgetOwnZone } from '../reports'

/** The views, in the order the navigation shows them; later versions replace NotYet with theirs. */
const VIEWS = [
  { view: 'map', href: '#/', label: strings.navMap, adminOnly: false },
  { view: 'history', href: '#/history', label: strings.navHistory, adminOnly: false },
  { view: 'share', href: '#/share', label: strings.navShare, adminOnly: false },
  { view: 'events', href: '#/events', label: strings.navEvents, adminOnly: false },
  { view: 'reports', href: '#/reports', label: strings.navReports, adminOnly: false },
  { view: 'admin', href: '#/admin', label: strings.navAdmin, adminOnly: true },
] as const

/** The signed-in console: the header (views, who is signed in, sign out) and the current view. */
export function Shell({ me }: { me: Me }) {
  // one fleet for the whole session: the map keeps its devices and stream across views
  const fleet = useMemo(() => new Fleet(), [])
  useEffect(() => {
    fleet.start()
    return () => {
      fleet.stop()
      forgetFilters()
      forgetOwnZone()
    }
  }, [fleet])
  // alarms as notices, and the count on Events, for as long as this person is signed in
  const board = useMemo(() => new NoticeBoard(fleet, me.id), [fleet, me.id])
  useEffect(() => {
    board.start()
    return () => board.stop()
  }, [board])
  const unseen = board.unseen.value
  const menuOpen = useSignal(false)
  const current = route.value
  useEffect(() => {
    menuOpen.value = false
  }, [current])

  const views = VIEWS.filter((v) => !v.adminOnly || me.role === 'admin')
  const title = views.find((v) => v.view === current.view)?.label ?? strings.navMap
  useEffect(() => {
    document.title = `${title} · ${strings.pageTitle}`
  }, [title])

  return (
    // on a desktop, a page with tables keeps a column free for the notices, so they never cover a row
    <div class={board.state.value.notices.length > 0 ? `shell with-notices on-${current.view}` : `shell on-${current.view}`}>
      <a class="skip" href="#content" onClick={(e) => (e.preventDefault(), document.getElementById('content')?.focus())}>
        {strings.skipToContent}
      </a>
      <header class="topbar">
        <a class="brand" href="#/">
          <span class="brand-mark" aria-hidden="true" />
          <span>{strings.product}</span>
        </a>
        <button
          type="button"
          class="menu-button"
          aria-expanded={menuOpen.value}
          aria-controls="nav"
          onClick={() => (menuOpen.value = !menuOpen.value)}
        >
          {strings.menu}
          {unseen > 0 && <NewAlarms count={unseen} />}
        </button>
        <nav id="nav" class={menuOpen.value ? 'nav open' : 'nav'} aria-label={strings.navLabel}>
          <ul>
            {views.map((v) => (
              <li key={v.view}>
                <a href={v.href} aria-current={current.view === v.view ? 'page' : undefined}>
                  {v.label}
                  {v.view === 'events' && unseen > 0 && <NewAlarms count={unseen} />}
                </a>
              </li>
            ))}
          </ul>
          <AccountMenu me={me} />
        </nav>
      </header>
      <Notices board={board} />
      {current.view === 'map' ? <LiveView fleet={fleet} selected={current.device} isAdmin={me.role === 'admin'} /> : current.view === 'history' ? <HistoryView fleet={fleet} route={current} /> : current.view === 'share' ? <ShareView fleet={fleet} /> : current.view === 'events' ? <EventsView fleet={fleet} board={board} /> : current.view === 'reports' ? <ReportsView fleet={fleet} /> : current.view === 'admin' ? <AdminView me={me} fleet={fleet} /> : <NotYet title={title} />}
    </div>
  )
}

/** A header wide enough for every view and a menu (as styles.css's header breakpoint). */
const wideHeader = mediaMatches('(min-width: 1200px)')

/**
 * Who is signed in, and their own settings: on a wide header a menu under their name (so the line
 * holds an admin's every view at 1280 px), in the phone's menu the name and then every button.
 */
function AccountMenu({ me }: { me: Me }) {
  const open = useSignal(false)
  const wide = wideHeader.value
  const name = strings.account(me.name, me.account.name)
  const title = me.role === 'admin' ? `${name} (${strings.roleAdmin})` : name
  useEffect(() => {
    if (!open.value) return
    const outside = (event: Event) => {
      if (!(event.target instanceof Element && event.target.closest('.account'))) open.value = false
    }
    const escape = (event: KeyboardEvent) => {
      if (event.key !== 'Escape' || document.querySelector('dialog[open]')) return
      open.value = false
      document.getElementById('account-toggle')?.focus()
    }
    document.addEventListener('pointerdown', outside)
    document.addEventListener('keydown', escape)
    return () => {
      document.removeEventListener('pointerdown', outside)
      document.removeEventListener('keydown', escape)
    }
  }, [open.value])
  // a choice (a button of the menu's own, not one inside its dialog) closes it
  const chosen = (event: MouseEvent) => {
    if (event.target instanceof Element && event.target.closest('.account-menu > button')) open.value = false
  }
  return (
    <div class={wide ? 'account wide' : 'account'}>
      {wide ? (
        <button type="button" id="account-toggle" class="who" title={title} aria-expanded={open.value} aria-controls="account-menu" onClick={() => (open.value = !open.value)}>
          <span class="who-name">{name}</span>
          <span class="caret" aria-hidden="true" />
        </button>
      ) : (
        <span class="who" title={title}>
          {name}
        </span>
      )}
      {/* closed, the menu keeps its dialog and its "… saved." note shown (styles.css) */}
      <div id="account-menu" class={wide && open.value ? 'account-menu open' : 'account-menu'} onClick={chosen}>
        <OwnTimeZone />
        <EmailAlerts />
        <ChangePassword />
        <button type="button" class="quiet" onClick={() => void signOut()}>
          {strings.signOut}
        </button>
      </div>
    </div>
  )
}

/** How many alarms came since the Events page was last open: the number, and the words for screen readers. */
function NewAlarms({ count }: { count: number }) {
  return (
    <span class="nav-badge">
      <span aria-hidden="true">{count > 99 ? '99+' : count}</span>
      <span class="sr-only">{` (${strings.newAlarms(count)})`}</span>
    </span>
  )
}
