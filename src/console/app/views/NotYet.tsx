import { strings } from '../strings'

/** A view the navigation names but a later version brings. */
export function NotYet({ title }: { title: string }) {
  return (
    <main id="content" class="not-yet" tabIndex={-1}>
      <h1>{strings.notYetTitle(title)}</h1>
      <p>{strings.notYetBody}</p>
      <p>
        <a href="#/">{strings.backToMap}</a>
      </p>
    </main>
  )
}
