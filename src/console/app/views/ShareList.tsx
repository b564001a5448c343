import { useSignal } from '@preact/signals'
import { ApiError } from '../api'
import { now } from '../clock'
import type { Fleet } from '../fleet'
import { ago, when } from '../format'
import { extendLink, getLink, linkState, PERMISSIONS, TTL_PRESETS_S, until } from '../share'
import { strings } from '../strings'
import type { ShareLink } from '../types'
import { ShareLinkCard } from './ShareLinkCard'

/** Aliases named before "and N more" */
const NAMED_DEVICES = 3

/** The devices of a link by alias (the fleet knows every device the person reaches), the first few then a count. */
export function devicesText(fleet: Fleet, ids: string[]): string {
  const names = ids.slice(0, NAMED_DEVICES).map((id) => fleet.devices.get(id)?.body.alias ?? id)
  const more = ids.length - names.length
  return more > 0 ? `${names.join(', ')} ${strings.shareAndMore(more)}` : names.join(', ')
}

const problemText = (error: unknown) => (error instanceof ApiError ? (error.problem?.detail ?? error.message) : strings.networkDown)

/** The person's links, newest first: devices, state, expiry, views, last use; show, extend, revoke. */
export function ShareList({ fleet, links, onChanged, onRevoke }: { fleet: Fleet; links: ShareLink[]; onChanged: () => void; onRevoke: (link: ShareLink) => void }) {
  fleet.loading.value // aliases once the devices have loaded (not at every live fix)
  return (
    <ul class="share-links">
      {links.map((link) => (
        <ShareRow key={link.id} fleet={fleet} link={link} onChanged={onChanged} onRevoke={onRevoke} />
      ))}
    </ul>
  )
}

function ShareRow({ fleet, link, onChanged, onRevoke }: { fleet: Fleet; link: ShareLink; onChanged: () => void; onRevoke: (link: ShareLink) => void }) {
  const nowMs = now.value
  const state = linkState(link, nowMs)
  const shown = useSignal<{ status: 'loading' } | { status: 'ready'; url: string } | { status: 'error'; message: string } | null>(null)
  const extending = useSignal(false)
  const extendTo = useSignal<number>(TTL_PRESETS_S[1])
  const busy = useSignal(false)
  const error = useSignal<string | null>(null)

  const devices = devicesText(fleet, link.devices)
  const expiresMs = Date.parse(link.expires_at)
  const lastMs = link.last_accessed_at ? Date.parse(link.last_accessed_at) : null
  const permissions = PERMISSIONS.filter((p) => link.acl.includes(p.id)).map((p) => strings.sharePermission[p.name])

  async function toggleShown() {
    if (shown.value) return void (shown.value = null)
    shown.value = { status: 'loading' }
    try {
      // the list leaves out the short link: the link's own page has it
      const detail = await getLink(link.id)
      shown.value = detail.short_url ? { status: 'ready', url: detail.short_url } : { status: 'error', message: strings.loadFailed }
    } catch (failure) {
      shown.value = { status: 'error', message: problemText(failure) }
    }
  }

  async function extend(event: Event) {
    event.preventDefault()
    busy.value = true
    error.value = null
    try {
      await extendLink(link.id, extendTo.value)
      extending.value = false
      onChanged()
    } catch (failure) {
      error.value = problemText(failure)
    } finally {
      busy.value = false
    }
  }

  const headingId = `share-link-${link.id}`
  return (
    <li class={`share-link state-${state}`} data-link={link.id} data-state={state} aria-labelledby={headingId}>
      <div class="share-link-head">
        <span class={`share-badge ${state}`}>{strings.shareStates[state]}</span>
        <h3 id={headingId} class="share-link-devices" tabIndex={-1}>
          {devices}
        </h3>
      </div>
      <p class="share-link-facts">
        {state === 'revoked' ? (
          <span>{strings.shareRevokedNote}</span>
        ) : (
          <time class="share-expiry" dateTime={link.expires_at} title={when(expiresMs, nowMs)}>
            {state === 'expired' ? strings.shareExpiredAgo(ago(expiresMs / 1000, nowMs)) : strings.shareExpiresIn(until(expiresMs, nowMs))}
          </time>
        )}
        <span class="share-views">{strings.shareViews(link.unique_views)}</span>
        <span class="share-last">
          {lastMs === null ? (
            strings.shareNeverOpened
          ) : (
            <time dateTime={link.last_accessed_at!} title={when(lastMs, nowMs)}>
              {strings.shareLastOpened(ago(lastMs / 1000, nowMs))}
            </time>
          )}
        </span>
        <span class="share-perms">{permissions.join(', ')}</span>
      </p>

      {state !== 'revoked' && (
        <div class="share-actions">
          {state === 'active' && (
            <button type="button" aria-expanded={shown.value !== null} aria-describedby={headingId} onClick={() => void toggleShown()}>
              {shown.value ? strings.shareHideLink : strings.shareShowLink}
            </button>
          )}
          <button type="button" aria-expanded={extending.value} aria-describedby={headingId} onClick={() => (extending.value = !extending.value)}>
            {strings.shareExtend}
          </button>
          <button type="button" class="danger-quiet" aria-describedby={headingId} onClick={() => onRevoke(link)}>
            {strings.shareRevoke}
          </button>
        </div>
      )}

      {extending.value && state !== 'revoked' && (
        <form class="share-extend" onSubmit={(e) => void extend(e)}>
          <div class="field">
            <label for={`share-extend-${link.id}`}>{strings.shareExtendLabel}</label>
            <select id={`share-extend-${link.id}`} value={extendTo.value} onChange={(e) => (extendTo.value = Number(e.currentTarget.value))}>
              {TTL_PRESETS_S.map((seconds) => (
                <option key={seconds} value={seconds}>
                  {strings.sharePreset(seconds)}
                </option>
              ))}
            </select>
          </div>
          <button type="submit" class="primary" disabled={busy.value}>
            {strings.shareSave}
          </button>
          <button type="button" onClick={() => ((extending.value = false), (error.value = null))}>
            {strings.shareCancel}
          </button>
          <p class="muted small share-extend-help">{strings.shareExtendHelp}</p>
        </form>
      )}
      {error.value && (
        <p class="alert" role="alert">
          {error.value}
        </p>
      )}

      {shown.value && state === 'active' && (
        <div class="share-shown">
          {shown.value.status === 'loading' && <p class="muted">{strings.loading}</p>}
          {shown.value.status === 'error' && <p class="alert">{shown.value.message}</p>}
          {shown.value.status === 'ready' && <ShareLinkCard url={shown.value.url} id={link.id} />}
        </div>
      )}
    </li>
  )
}
