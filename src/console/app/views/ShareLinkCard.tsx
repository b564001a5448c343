import { useSignal } from '@preact/signals'
import { useMemo, useRef } from 'preact/hooks'
import { copyText, qrCode } from '../share'
import { strings } from '../strings'

/** A short link to hand on: the link in a field, a Copy button, Open, and its QR code. */
export function ShareLinkCard({ url, id }: { url: string; id: string }) {
  const field = useRef<HTMLInputElement>(null)
  const copied = useSignal<'copied' | 'selected' | null>(null)
  const qr = useMemo(() => qrCode(url), [url])
  const fieldId = `share-url-${id}`

  async function copy() {
    copied.value = null
    copied.value = await copyText(url, field.current)
  }

  return (
    <div class="share-link-card">
      <div class="share-link-main">
        <label for={fieldId}>{strings.shareShortLink}</label>
        <div class="share-copy-row">
          <input
            ref={field}
            id={fieldId}
            class="share-url"
            type="text"
            readOnly
            value={url}
            spellcheck={false}
            onFocus={(e) => e.currentTarget.select()}
          />
          <button type="button" class="primary share-copy" onClick={() => void copy()}>
            {strings.shareCopy}
          </button>
        </div>
        <p class="share-copy-status small" role="status">
          {copied.value === 'copied' ? strings.shareCopied : copied.value === 'selected' ? strings.shareSelectedToCopy : ''}
        </p>
        <p class="small">
          <a href={url} target="_blank" rel="noopener noreferrer">
            {strings.shareOpen} ↗
          </a>
        </p>
      </div>
      <figure class="share-qr">
        <svg
          viewBox={`0 0 ${qr.size} ${qr.size}`}
          width="176"
          height="176"
          role="img"
          aria-label={strings.shareQr(url)}
          shape-rendering="crispEdges"
          data-url={url}
        >
          <rect width={qr.size} height={qr.size} fill="#fff" />
          <path d={qr.path} fill="#000" />
        </svg>
        <figcaption class="muted small">{strings.shareQrHelp}</figcaption>
      </figure>
    </div>
  )
}
