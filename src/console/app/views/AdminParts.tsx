/**
 * The Administration view's building blocks: a modal dialog, labelled fields that show their
 * error beside them, a searchable list of checkboxes, a confirmation, the save state of a form,
 * and the lists' scaffolding (loading or empty, the table, the row's buttons, confirming a delete).
 */
import { type Signal, useSignal } from '@preact/signals'
import type { ComponentChildren } from 'preact'
import { useEffect, useMemo, useRef } from 'preact/hooks'
import { describeFailure, type Failure } from '../admin'
import { strings } from '../strings'

const s = strings.admin

let dialogs = 0

/**
 * A modal dialog (the browser's <dialog>: focus stays inside, Escape closes it). The first element
 * marked `data-autofocus` takes the focus; closing gives it back to what had it.
 */
export function Dialog({ title, onClose, wide, children }: { title: string; onClose: () => void; wide?: boolean; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null)
  const id = useMemo(() => `dialog-${++dialogs}`, [])
  // what had the focus when the dialog was asked for (the button that opens it)
  const opener = useMemo(() => (document.activeElement instanceof HTMLElement ? document.activeElement : null), [])
  useEffect(() => {
    const dialog = ref.current!
    dialog.showModal()
    dialog.querySelector<HTMLElement>('[data-autofocus]')?.focus()
    return () => {
      if (dialog.open) dialog.close()
      // the row that opened it may be gone (deleted): the view then; an opener in a menu that has
      // closed since (the header's account menu) cannot take it: that menu's button then
      if (opener?.isConnected) opener.focus()
      if (opener && document.activeElement !== opener) {
        const menu = opener.closest('[id]')?.id
        ;(document.querySelector<HTMLElement>(menu ? `[aria-controls="${menu}"]` : '#content') ?? document.getElementById('content'))?.focus()
      }
    }
  }, [])
  return (
    <dialog
      ref={ref}
      class={wide ? 'admin-dialog wide' : 'admin-dialog'}
      aria-labelledby={`${id}-title`}
      onCancel={(event) => {
        event.preventDefault()
        onClose()
      }}
    >
      <div class="dialog-head">
        <h2 id={`${id}-title`}>{title}</h2>
        <button type="button" class="icon-button" aria-label={s.close} onClick={onClose}>
          ×
        </button>
      </div>
      <div class="dialog-body">{children}</div>
    </dialog>
  )
}


/**
 * A button of the header's account area (change password, email alerts, time zone): it opens its
 * form in a dialog, and once the form is saved a short note says so beside the button until it is
 * opened again.
 */
export function AccountAction({ label, savedNote, id, title, form }: {
  label: string
  savedNote: string
  id?: string
  title?: string
  /** the form, told to close with whether it saved */
  form: (onClose: (saved: boolean) => void) => ComponentChildren
}) {
  const open = useSignal(false)
  const saved = useSignal(false)
  return (
    <>
      {saved.value && (
        <span class="account-note" role="status">
          {savedNote}
        </span>
      )}
      <button
        type="button"
        id={id}
        class="quiet"
        title={title}
        onClick={() => {
          saved.value = false
          open.value = true
        }}
      >
        {label}
      </button>
      {open.value &&
        form((done) => {
          open.value = false
          saved.value = done
        })}
    </>
  )
}

/**
 * A form's save: busy while it runs, then the failure (the API's words) if any, with the focus on
 * the first field at fault.
 */
export function useSave() {
  const busy = useSignal(false)
  const failure = useSignal<Failure | null>(null)
  const form = useRef<HTMLFormElement>(null)

  function focusFirstInvalid() {
    setTimeout(() => {
      const target = form.current?.querySelector<HTMLElement>('[aria-invalid="true"]') ?? form.current?.querySelector<HTMLElement>('.form-alert')
      target?.focus()
    }, 0)
  }

  return {
    busy,
    failure,
    form,
    /** runs a write; true when it went through */
    async run(work: () => Promise<unknown>, conflictField?: string): Promise<boolean> {
      busy.value = true
      failure.value = null
      try {
        await work()
        return true
      } catch (error) {
        failure.value = describeFailure(error, conflictField)
        focusFirstInvalid()
        return false
      } finally {
        busy.value = false
      }
    },
    /** the form's own checks found these: nothing is sent */
    invalid(fields: Record<string, string>): boolean {
      if (Object.keys(fields).length === 0) return false
      failure.value = { message: s.checkFields, fields, status: null }
      focusFirstInvalid()
      return true
    },
    /** the person changed a field: its message (and those of what is inside it) goes; with the last one, the form's */
    edited(key: string): void {
      const current = failure.value
      if (!current) return
      const left = Object.entries(current.fields).filter(([k]) => k !== key && !k.startsWith(`${key}/`))
      if (left.length === Object.keys(current.fields).length) return
      failure.value = left.length === 0 ? null : { ...current, fields: Object.fromEntries(left) }
    },
    /** the message of one field, if any */
    error(key: string): string | undefined {
      return failure.value?.fields[key]
    },
  }
}

/**
 * The form's message, above its fields: the API's detail, or "check the fields" when every field
 * at fault shows its own message. `shown` says which field keys the form shows.
 */
export function FormAlert({ failure, shown }: { failure: Failure | null; shown: (key: string) => boolean }) {
  if (!failure) return null
  const keys = Object.keys(failure.fields)
  const allShown = keys.length > 0 && keys.every(shown)
  return (
    <p class="alert form-alert" role="alert" tabIndex={-1}>
      {allShown ? s.checkFields : failure.message}
    </p>
  )
}

interface FieldProps {
  id: string
  label: string
  error?: string
  hint?: string
  autofocus?: boolean
}

const describedBy = (id: string, error?: string, hint?: string) => [error ? `${id}-error` : '', hint ? `${id}-hint` : ''].filter(Boolean).join(' ') || undefined

function FieldNotes({ id, error, hint }: { id: string; error?: string; hint?: string }) {
  return (
    <>
      {error && (
        <p id={`${id}-error`} class="field-error">
          {error}
        </p>
      )}
      {hint && (
        <p id={`${id}-hint`} class="hint">
          {hint}
        </p>
      )}
    </>
  )
}

export function TextField({
  id,
  label,
  error,
  hint,
  autofocus,
  value,
  onInput,
  type = 'text',
  required,
  autocomplete = 'off',
  inputMode,
  maxLength,
  placeholder,
  mono,
}: FieldProps & {
  value: string
  onInput: (value: string) => void
  type?: 'text' | 'password' | 'email' | 'datetime-local' | 'date' | 'time'
  required?: boolean
  autocomplete?: string
  inputMode?: 'numeric' | 'text'
  maxLength?: number
  placeholder?: string
  mono?: boolean
}) {
  return (
    <div class={error ? 'field invalid' : 'field'}>
      <label for={id}>
        {label}
        {required && <span class="required"> {s.required}</span>}
      </label>
      <input
        id={id}
        name={id}
        // (a union of input types is more than Preact's typings take)
        type={type as 'text'}
        class={mono ? 'mono' : undefined}
        value={value}
        onInput={(event) => onInput(event.currentTarget.value)}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={describedBy(id, error, hint)}
        aria-required={required ? 'true' : undefined}
        autocomplete={autocomplete}
        autocapitalize="off"
        spellcheck={false}
        inputMode={inputMode}
        maxLength={maxLength}
        placeholder={placeholder}
        data-autofocus={autofocus ? '' : undefined}
      />
      <FieldNotes id={id} error={error} hint={hint} />
    </div>
  )
}

export function SelectField({
  id,
  label,
  error,
  hint,
  autofocus,
  value,
  onChange,
  options,
  required,
}: FieldProps & { value: string; onChange: (value: string) => void; options: { value: string; label: string }[]; required?: boolean }) {
  return (
    <div class={error ? 'field invalid' : 'field'}>
      <label for={id}>
        {label}
        {required && <span class="required"> {s.required}</span>}
      </label>
      <select
        id={id}
        name={id}
        value={value}
        onChange={(event) => onChange(event.currentTarget.value)}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={describedBy(id, error, hint)}
        aria-required={required ? 'true' : undefined}
        data-autofocus={autofocus ? '' : undefined}
      >
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
      <FieldNotes id={id} error={error} hint={hint} />
    </div>
  )
}

/** radio buttons in a fieldset: a choice of a few, each with a line saying what it means */
export function ChoiceField({
  id,
  label,
  error,
  value,
  onChange,
  options,
}: FieldProps & { value: string; onChange: (value: string) => void; options: { value: string; label: string; detail: string }[] }) {
  return (
    <fieldset class={error ? 'choice invalid' : 'choice'} aria-describedby={describedBy(id, error)}>
      <legend>{label}</legend>
      {options.map((option) => (
        <label key={option.value} class="choice-item">
          <input
            type="radio"
            name={id}
            id={`${id}-${option.value}`}
            value={option.value}
            checked={value === option.value}
            onChange={() => onChange(option.value)}
            aria-invalid={error ? 'true' : undefined}
          />
          <span>
            <span class="choice-label">{option.label}</span>
            <span class="hint">{option.detail}</span>
          </span>
        </label>
      ))}
      <FieldNotes id={id} error={error} />
    </fieldset>
  )
}

export interface PickOption {
  id: string
  label: string
  /** a second line: an identifier, a role */
  detail?: string
}

/** at most this many checkboxes drawn: a group of 10,000 devices is narrowed by the filter */
const PICK_SHOWN = 200

/** Checkboxes for choosing some of many (a group's devices), with a filter when the list is long; those chosen at the start come first. */
export function PickList({
  id,
  label,
  error,
  hint,
  options,
  selected,
  onChange,
  empty,
}: FieldProps & { options: PickOption[]; selected: string[]; onChange: (next: string[]) => void; empty: string }) {
  const filter = useSignal('')
  const initial = useRef(new Set(selected))
  const ordered = useMemo(() => [...options].sort((a, b) => Number(!initial.current.has(a.id)) - Number(!initial.current.has(b.id))), [options])
  const chosen = new Set(selected)
  const query = filter.value.trim().toLowerCase()
  const matching = query ? ordered.filter((o) => o.label.toLowerCase().includes(query) || (o.detail ?? '').toLowerCase().includes(query)) : ordered
  const shown = matching.slice(0, PICK_SHOWN)
  function toggle(optionId: string, on: boolean) {
    onChange(on ? [...selected, optionId] : selected.filter((x) => x !== optionId))
  }
  return (
    <fieldset class={error ? 'pick invalid' : 'pick'} aria-describedby={describedBy(id, error, hint)}>
      <legend>
        {label} <span class="pick-count">{s.selectedCount(chosen.size, options.length)}</span>
      </legend>
      {options.length > 8 && (
        <input
          type="search"
          class="pick-filter"
          value={filter.value}
          onInput={(event) => (filter.value = event.currentTarget.value)}
          aria-label={s.filterNamed(label)}
          placeholder={s.filterPlaceholder}
          autocomplete="off"
        />
      )}
      {options.length === 0 ? (
        <p class="hint">{empty}</p>
      ) : (
        <div class="pick-box">
          {shown.map((option) => (
            <label key={option.id} class="pick-item">
              <input type="checkbox" checked={chosen.has(option.id)} onChange={(event) => toggle(option.id, event.currentTarget.checked)} />
              <span class="pick-text">
                <span>{option.label}</span>
                {option.detail && <span class="hint">{option.detail}</span>}
              </span>
            </label>
          ))}
          {matching.length === 0 && <p class="hint">{s.noneMatch}</p>}
          {matching.length > shown.length && <p class="hint">{s.moreToFilter(matching.length - shown.length)}</p>}
        </div>
      )}
      <FieldNotes id={id} error={error} hint={hint} />
    </fieldset>
  )
}

/** Save and Cancel at the foot of a form; Save says it is busy while the request runs. */
export function FormButtons({ busy, save, busyLabel, onCancel, danger }: { busy: boolean; save: string; busyLabel?: string; onCancel: () => void; danger?: boolean }) {
  return (
    <div class="form-buttons">
      <button type="submit" class={danger ? 'danger' : 'primary'} disabled={busy} aria-disabled={busy ? 'true' : undefined}>
        {busy ? (busyLabel ?? s.saving) : save}
      </button>
      <button type="button" onClick={onCancel}>
        {s.cancel}
      </button>
    </div>
  )
}

/** "Delete Truck 1?": what goes with it, a busy state, the API's refusal (409: the last admin, a model in use) */
export function ConfirmDialog({
  title,
  body,
  confirm,
  onConfirm,
  onClose,
}: {
  title: string
  body: ComponentChildren
  confirm: string
  onConfirm: () => Promise<unknown>
  onClose: () => void
}) {
  const save = useSave()
  async function submit(event: SubmitEvent) {
    event.preventDefault()
    if (await save.run(onConfirm)) onClose()
  }
  return (
    <Dialog title={title} onClose={onClose}>
      <form ref={save.form} onSubmit={submit} aria-busy={save.busy.value} noValidate>
        <div class="confirm-body">{body}</div>
        <FormAlert failure={save.failure.value} shown={() => false} />
        <div class="form-buttons">
          <button type="submit" class="danger" disabled={save.busy.value} data-autofocus>
            {save.busy.value ? s.working : confirm}
          </button>
          <button type="button" onClick={onClose}>
            {s.cancel}
          </button>
        </div>
      </form>
    </Dialog>
  )
}

/** a list that is still coming, or could not be read */
export function Pending({ state, onRetry }: { state: { status: string; message?: string }; onRetry: () => void }) {
  if (state.status === 'error') {
    return (
      <div class="alert" role="alert">
        <p>{state.message}</p>
        <button type="button" onClick={onRetry}>
          {s.retry}
        </button>
      </div>
    )
  }
  return <p class="muted">{strings.loading}</p>
}

/** a list read from the API, as a view holds it */
export type ListState<T> = { status: 'idle' | 'loading' } | { status: 'error'; message: string } | { status: 'ready'; value: readonly T[] }

/**
 * A list's place in a tab: `Pending` until it is read, then `empty` when it has nothing (without
 * `empty`, the table is drawn with no rows), else what `children` draws of the items.
 */
export function AdminList<T>({
  state,
  onRetry,
  empty,
  children,
}: {
  state: ListState<T>
  onRetry: () => void
  empty?: string
  children: (items: readonly T[]) => ComponentChildren
}) {
  if (state.status !== 'ready') return <Pending state={state} onRetry={onRetry} />
  if (empty !== undefined && state.value.length === 0) return <p class="empty-note">{empty}</p>
  return <>{children(state.value)}</>
}

/** a list's table: its column heads, then an unnamed last column for the rows' buttons (`RowActions`) */
export function AdminTable({ class: className, columns, children }: { class?: string; columns: string[]; children: ComponentChildren }) {
  return (
    <table class={className ? `admin-table ${className}` : 'admin-table'}>
      <thead>
        <tr>
          {columns.map((column, index) => (
            <th key={index} scope="col">
              {column}
            </th>
          ))}
          <th scope="col">
            <span class="visually-hidden">{s.colActions}</span>
          </th>
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  )
}

/** "Edit", named for its row for a screen reader ("Edit Truck 1") */
export function EditButton({ name, onClick }: { name: string; onClick: () => void }) {
  return (
    <button type="button" aria-label={s.editNamed(name)} onClick={onClick}>
      {s.edit}
    </button>
  )
}

/** "Delete", named for its row for a screen reader; it asks first (`ConfirmDelete`) */
export function DeleteButton({ name, onClick }: { name: string; onClick: () => void }) {
  return (
    <button type="button" class="danger-quiet" aria-label={s.deleteNamed(name)} onClick={onClick}>
      {s.delete}
    </button>
  )
}

/** a row's last cell: its own buttons (`children`), if any, then Edit and Delete */
export function RowActions({ name, onEdit, onDelete, children }: { name: string; onEdit: () => void; onDelete: () => void; children?: ComponentChildren }) {
  return (
    <td class="row-actions">
      {children}
      <EditButton name={name} onClick={onEdit} />
      <DeleteButton name={name} onClick={onDelete} />
    </td>
  )
}

/**
 * The confirmation of a delete, shown while `target` holds the item a Delete button put there;
 * `onDelete` does it (the request, the notice, the refresh); closing empties `target`.
 */
export function ConfirmDelete<T>({
  target,
  title,
  body,
  confirm,
  onDelete,
}: {
  target: Signal<T | null>
  title: (item: T) => string
  body: string | ((item: T) => string)
  confirm: string
  onDelete: (item: T) => Promise<unknown>
}) {
  const item = target.value
  if (item === null) return null
  return (
    <ConfirmDialog
      title={title(item)}
      body={<p>{typeof body === 'string' ? body : body(item)}</p>}
      confirm={confirm}
      onClose={() => (target.value = null)}
      onConfirm={() => onDelete(item)}
    />
  )
}

/** the head of a section: its title, what it holds, its main action */
export function SectionHead({ id, title, intro, children }: { id: string; title: string; intro?: string; children?: ComponentChildren }) {
  return (
    <div class="section-head">
      <div>
        <h2 id={id}>{title}</h2>
        {intro && <p class="muted">{intro}</p>}
      </div>
      {children && <div class="section-actions">{children}</div>}
    </div>
  )
}

/** a table cell that, on a phone, shows its column's name before its value */
export function Cell({ label, class: className, children }: { label: string; class?: string; children: ComponentChildren }) {
  return (
    <td data-label={label} class={className}>
      <span class="cell-value">{children}</span>
    </td>
  )
}

/** names, as many as fit a cell: "Trucks, Vans and 3 more"; `total` counts those without a name here too (an unlinked device) */
export function NameList({ names, none, total = names.length }: { names: string[]; none: string; total?: number }) {
  if (total === 0) return <span class="muted">{none}</span>
  const shown = names.slice(0, 3)
  const more = total - shown.length
  return <span>{more > 0 ? (shown.length > 0 ? s.andMore(shown.join(', '), more) : s.deviceCount(more)) : shown.join(', ')}</span>
}

/** previous and next pages of a long list */
export function Pager({ page, pages, onPage, label }: { page: number; pages: number; onPage: (page: number) => void; label: string }) {
  if (pages <= 1) return null
  return (
    <nav class="pager" aria-label={label}>
      <button type="button" disabled={page === 0} onClick={() => onPage(page - 1)}>
        {s.previous}
      </button>
      <span>{s.pageOf(page + 1, pages)}</span>
      <button type="button" disabled={page >= pages - 1} onClick={() => onPage(page + 1)}>
        {s.next}
      </button>
    </nav>
  )
}
