import { useSignal } from '@preact/signals'
import { useEffect, useRef } from 'preact/hooks'
import { ApiError } from '../api'
import type { Fleet } from '../fleet'
import { me } from '../session'
import { now } from '../clock'
import { when } from '../format'
import { endedFor, getLink, listLinks, mergeLinks, revokeLink, until } from '../share'
import { strings } from '../strings'
import type { ShareCreated, ShareLink } from '../types'
import { ShareForm } from './ShareForm'
import { ShareLinkCard } from './ShareLinkCard'
import { devicesText, ShareList } from './ShareList'

const problemText = (error: unknown) => (error instanceof ApiError ? (error.problem?.detail ?? error.message) : strings.networkDown)

/** #/share: create a link (devices, expiry, permissions), hand on its short link and QR code; the person's links, to extend or revoke. */
export function ShareView({ fleet }: { fleet: Fleet }) {
  const userId = me.value?.id ?? ''
  const links = useSignal<ShareLink[]>([])
  const listStatus = useSignal<'loading' | 'ready' | { error: string }>('loading')
  const created = useSignal<ShareCreated | null>(null)
  const revoking = useSignal<ShareLink | null>(null)
  const createdHeading = useRef<HTMLHeadingElement>(null)
  const heading = useRef<HTMLHeadingElement>(null)
  /** the link just revoked: its Revoke button is gone, so focus goes to its row once the dialog closes */
  const revokedLast = useRef<string | null>(null)

  async function reload() {
    try {
      const active = await listLinks()
      links.value = mergeLinks(userId, links.value, active, Date.now())
      listStatus.value = 'ready'
    } catch (error) {
      listStatus.value = { error: problemText(error) }
    }
  }

  useEffect(() => {
    // links seen to end before, this visit or an earlier one, show until the list comes
    links.value = mergeLinks(userId, [], [], Date.now())
    void reload()
    heading.current?.focus()
  }, [])

  useEffect(() => {
    if (created.value) createdHeading.current?.focus()
  }, [created.value])

  async function revoke(link: ShareLink) {
    await revokeLink(link.id)
    // the server's word on the link now (revoked), kept while the page is open: the list shows active links only
    let ended: ShareLink = { ...link, revoked: true }
    try {
      ended = await getLink(link.id)
    } catch {
      // out of reach by now: the local mark stands
    }
    endedFor(userId).set(link.id, ended)
    revokedLast.current = link.id
    if (created.value?.id === link.id) created.value = null
    await reload()
  }

  function closeDialog() {
    revoking.value = null
    const id = revokedLast.current
    revokedLast.current = null
    if (id) document.getElementById(`share-link-${id}`)?.focus()
  }

  const status = listStatus.value
  // the list's word once the link's expiry changed there
  const createdExpiry = created.value && (links.value.find((l) => l.id === created.value!.id)?.expires_at ?? created.value.expires_at)
  const anyEnded = links.value.some((l) => l.revoked || Date.parse(l.expires_at) <= Date.now())

  return (
    <main id="content" class="share-view" tabIndex={-1}>
      <div class="share-inner">
        <header class="share-header">
          <h1 ref={heading} tabIndex={-1}>
            {strings.shareTitle}
          </h1>
          <p class="muted">{strings.shareIntro}</p>
        </header>
        <div class="share-columns">
          <section class="share-card share-new" aria-labelledby="share-new-h">
            <h2 id="share-new-h">{strings.shareNew}</h2>
            <ShareForm
              fleet={fleet}
              onCreated={(link) => {
                created.value = link
                void reload()
              }}
            />
          </section>
          <div class="share-side">
            {created.value && (
              <section class="share-card share-created" aria-labelledby="share-created-h">
                <div class="share-created-head">
                  <h2 id="share-created-h" ref={createdHeading} tabIndex={-1}>
                    {strings.shareCreated}
                  </h2>
                  <button type="button" class="link" onClick={() => (created.value = null)}>
                    {strings.shareClose}
                  </button>
                </div>
                <p class="share-created-devices">
                  {devicesText(fleet, created.value.devices)}
                  <time class="share-expiry" dateTime={createdExpiry!} title={when(Date.parse(createdExpiry!), now.value)}>
                    {strings.shareExpiresIn(until(Date.parse(createdExpiry!), now.value))}
                  </time>
                </p>
                <ShareLinkCard url={created.value.short_url} id={created.value.id} />
              </section>
            )}
            <section class="share-card" aria-labelledby="share-list-h">
              <div class="share-list-head">
                <h2 id="share-list-h">{strings.shareYourLinks}</h2>
                <button type="button" onClick={() => void reload()}>
                  {strings.shareRefresh}
                </button>
              </div>
              {typeof status === 'object' && (
                <p class="alert" role="alert">
                  {status.error}
                </p>
              )}
              {status === 'loading' && links.value.length === 0 && <p class="muted">{strings.loading}</p>}
              {status === 'ready' && links.value.length === 0 && <p class="muted">{strings.shareNone}</p>}
              {links.value.length > 0 && <ShareList fleet={fleet} links={links.value} onChanged={() => void reload()} onRevoke={(link) => (revoking.value = link)} />}
              {anyEnded && <p class="muted small">{strings.shareEndedKept}</p>}
            </section>
          </div>
        </div>
      </div>
      <RevokeDialog fleet={fleet} link={revoking.value} onClose={closeDialog} onConfirm={revoke} />
    </main>
  )
}

/** The confirmation before a revocation: a modal dialog (Escape or Cancel closes it; focus starts on Cancel). */
function RevokeDialog({ fleet, link, onClose, onConfirm }: { fleet: Fleet; link: ShareLink | null; onClose: () => void; onConfirm: (link: ShareLink) => Promise<void> }) {
  const dialog = useRef<HTMLDialogElement>(null)
  const cancel = useRef<HTMLButtonElement>(null)
  const busy = useSignal(false)
  const error = useSignal<string | null>(null)

  useEffect(() => {
    const el = dialog.current!
    if (link && !el.open) {
      error.value = null
      el.showModal()
      cancel.current?.focus()
    } else if (!link && el.open) el.close()
  }, [link])

  async function confirm() {
    if (!link) return
    busy.value = true
    error.value = null
    try {
      await onConfirm(link)
      // closed here, before the focus moves: closing restores focus to the (now gone) Revoke button
      dialog.current?.close()
      onClose()
    } catch (failure) {
      error.value = problemText(failure)
    } finally {
      busy.value = false
    }
  }

  return (
    <dialog ref={dialog} class="share-dialog" aria-labelledby="share-revoke-h" aria-describedby="share-revoke-body" onClose={onClose}>
      <h2 id="share-revoke-h">{strings.shareRevokeTitle}</h2>
      <p id="share-revoke-body">{link ? strings.shareRevokeBody(devicesText(fleet, link.devices)) : ''}</p>
      {error.value && (
        <p class="alert" role="alert">
          {error.value}
        </p>
      )}
      <div class="share-dialog-actions">
        <button type="button" ref={cancel} onClick={onClose}>
          {strings.shareCancel}
        </button>
        <button type="button" class="danger-solid" disabled={busy.value} onClick={() => void confirm()}>
          {strings.shareRevokeConfirm}
        </button>
      </div>
    </dialog>
  )
}
