import { useSignal } from '@preact/signals'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { type AdminSectionProps, type AdminStore, write } from '../admin'
import type { Fleet } from '../fleet'
import { PROTOCOL_NAMES } from '../../../ingest/protocols/names'
import { strings } from '../strings'
import type { DeviceModel } from '../types'
import { AdminList, AdminTable, Cell, ConfirmDelete, Dialog, FormAlert, FormButtons, NameList, RowActions, SectionHead, SelectField, TextField, useSave } from './AdminParts'

const s = strings.admin
/** the protocols this server speaks: a model's protocol is one of them (the API refuses any other) */
const PROTOCOLS: readonly string[] = PROTOCOL_NAMES
const FIELD_TYPES = ['text', 'number', 'password'] as const
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

interface FieldDraft {
  key: number
  /** the field as the server gave it: what this form does not show is kept */
  original: Record<string, unknown>
  name: string
  type: string
  label: string
  /** a regular expression the whole value must match; '' for none */
  pattern: string
  /** false: may be left empty, and is then not sent (the API's `required`) */
  required: boolean
}

interface CommandDraft {
  key: number
  /** the command as the server gave it: what this form does not show (its id, its widget's other settings) is kept */
  original: Record<string, unknown> | null
  name: string
  type: string
  label: string
  confirm: boolean
  confirmMessage: string
  /** send.text: what the device receives, {field} standing for a field's value; '' for none (cannot be sent) */
  sendText: string
  fields: FieldDraft[]
}

let drafts = 0

function toDraft(command: Record<string, unknown>): CommandDraft {
  const widget = (command.widget ?? {}) as Record<string, unknown>
  const fields = Array.isArray(widget.fields) ? (widget.fields as Record<string, unknown>[]) : []
  return {
    key: ++drafts,
    original: command,
    name: typeof command.name === 'string' ? command.name : '',
    type: typeof widget.type === 'string' ? widget.type : 'button',
    label: typeof widget.label === 'string' ? widget.label : '',
    confirm: widget.confirm === true,
    confirmMessage: typeof widget.confirm_message === 'string' ? widget.confirm_message : '',
    sendText: typeof (command.send as { text?: unknown } | undefined)?.text === 'string' ? (command.send as { text: string }).text : '',
    fields: fields.map((f) => ({
      key: ++drafts,
      original: f,
      name: typeof f.name === 'string' ? f.name : '',
      type: typeof f.type === 'string' ? f.type : 'text',
      label: typeof f.label === 'string' ? f.label : '',
      pattern: typeof f.pattern === 'string' ? f.pattern : '',
      // a field that never said: required, as the server treats a field left out
      required: f.required !== false,
    })),
  }
}

const newCommand = (): CommandDraft => ({ key: ++drafts, original: null, name: '', type: 'button', label: '', confirm: false, confirmMessage: '', sendText: '', fields: [] })
const newField = (): FieldDraft => ({ key: ++drafts, original: {}, name: '', type: 'text', label: '', pattern: '', required: true })

function without(object: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(object).filter(([k]) => !keys.includes(k)))
}

/** the command as the API takes it: the original's other keys kept, the widget rebuilt for its type */
function toCommand(draft: CommandDraft): Record<string, unknown> {
  const original = draft.original ?? {}
  const widget = (original.widget ?? {}) as Record<string, unknown>
  let built: Record<string, unknown>
  if (draft.type === 'button') {
    built = {
      ...without(widget, ['fields', 'confirm_message']),
      type: 'button',
      label: draft.label.trim() || draft.name.trim(),
      confirm: draft.confirm,
      ...(draft.confirm && draft.confirmMessage.trim() ? { confirm_message: draft.confirmMessage.trim() } : {}),
    }
  } else if (draft.type === 'form') {
    built = {
      ...without(widget, ['label', 'confirm', 'confirm_message']),
      type: 'form',
      fields: draft.fields.map((f) => ({
        ...without(f.original, ['pattern']),
        name: f.name.trim(),
        type: f.type,
        label: f.label.trim() || f.name.trim(),
        ...(f.pattern.trim() ? { pattern: f.pattern.trim() } : {}),
        required: f.required,
      })),
    }
  } else built = widget
  const sendText = draft.sendText.trim()
  return { ...without(original, ['send']), name: draft.name.trim(), widget: built, ...(sendText ? { send: { text: sendText } } : {}) }
}

/** The models the account's devices may use: its own (changed here) and the server-wide ones (read-only: the operator's). */
export function AdminModels({ store, fleet }: AdminSectionProps) {
  fleet.version.value
  useEffect(() => store.models.ensure(), [])
  const editing = useSignal<{ model: DeviceModel | null } | null>(null)
  const deleting = useSignal<DeviceModel | null>(null)
  const state = store.models.state.value
  const used = useMemo(() => {
    const count = new Map<string, number>()
    for (const d of fleet.order) if (d.body.model !== null) count.set(d.body.model, (count.get(d.body.model) ?? 0) + 1)
    return count
  }, [fleet.version.value])

  return (
    <section aria-labelledby="admin-models-h">
      <SectionHead id="admin-models-h" title={s.tabs.models} intro={s.modelsIntro}>
        <button type="button" class="primary" onClick={() => (editing.value = { model: null })}>
          {s.addModel}
        </button>
      </SectionHead>
      <AdminList state={state} onRetry={() => void store.models.refresh()} empty={s.noModels}>
        {(models) => (
          <AdminTable columns={[s.colName, s.protocol, s.colOwner, s.commands, s.colYourDevices]}>
            {models.map((model) => (
              <tr key={model.id} data-id={model.id}>
                <th scope="row" class="cell-name">
                  {model.name}
                </th>
                <Cell label={s.protocol}>{model.protocol ?? <span class="muted">{s.none}</span>}</Cell>
                <Cell label={s.colOwner}>{model.account === null ? <span class="muted">{s.serverWideModel}</span> : s.ownModel}</Cell>
                <Cell label={s.commands}>
                  <NameList names={model.commands.map((c) => c.name)} none={s.noCommands} />
                </Cell>
                <Cell label={s.colYourDevices}>{used.get(model.id) ?? 0}</Cell>
                {/* a server-wide model is the operator's: the API refuses to change it (403) */}
                {model.account === null ? (
                  <td class="row-actions" />
                ) : (
                  <RowActions name={model.name} onEdit={() => (editing.value = { model })} onDelete={() => (deleting.value = model)} />
                )}
              </tr>
            ))}
          </AdminTable>
        )}
      </AdminList>

      {editing.value && <ModelForm store={store} fleet={fleet} model={editing.value.model} onClose={() => (editing.value = null)} />}
      <ConfirmDelete
        target={deleting}
        title={(model) => s.deleteModelTitle(model.name)}
        body={s.deleteModelBody}
        confirm={s.deleteModel}
        onDelete={async (model) => {
          await write('DELETE', `models/${encodeURIComponent(model.id)}`)
          store.notice.value = s.modelDeleted(model.name)
          void store.models.refresh()
        }}
      />
    </section>
  )
}

function ModelForm({ store, fleet, model, onClose }: { store: AdminStore; fleet: Fleet; model: DeviceModel | null; onClose: () => void }) {
  const save = useSave()
  const [name, setName] = useState(model?.name ?? '')
  const [protocol, setProtocol] = useState(model?.protocol ?? '')
  const [commands, setCommands] = useState<CommandDraft[]>(() => (model?.commands ?? []).map((c) => toDraft(c)))
  const changeCommand = (key: number, change: Partial<CommandDraft>) => setCommands((list) => list.map((c) => (c.key === key ? { ...c, ...change } : c)))
  const move = (index: number, by: number) => {
    // the API's messages name commands by their place: after a move they no longer match
    save.failure.value = null
    setCommands((list) => {
      const next = [...list]
      const [item] = next.splice(index, 1)
      next.splice(index + by, 0, item)
      return next
    })
  }

  async function submit(event: SubmitEvent) {
    event.preventDefault()
    const errors: Record<string, string> = {}
    if (!name.trim()) errors.name = s.nameRequired
    commands.forEach((c, i) => {
      if (!c.name.trim()) errors[`commands/${i}/name`] = s.nameRequired
      if (c.type === 'form') {
        if (c.fields.length === 0) errors[`commands/${i}/widget/fields`] = s.formNeedsField
        const seen = new Set<string>()
        c.fields.forEach((f, j) => {
          const fieldName = f.name.trim()
          if (!FIELD_NAME.test(fieldName)) errors[`commands/${i}/widget/fields/${j}/name`] = s.fieldNameShape
          else if (seen.has(fieldName)) errors[`commands/${i}/widget/fields/${j}/name`] = s.fieldNameTwice
          seen.add(fieldName)
        })
      }
    })
    if (save.invalid(errors)) return
    const body = { name: name.trim(), protocol: protocol.trim() || null, commands: commands.map(toCommand) }
    const ok = await save.run(async () => {
      const saved = model ? await write<DeviceModel>('PATCH', `models/${encodeURIComponent(model.id)}`, body) : await write<DeviceModel>('POST', 'models', body)
      store.notice.value = model ? s.modelSaved(saved!.name) : s.modelAdded(saved!.name)
    })
    if (!ok) return
    onClose()
    void store.models.refresh()
  }

  const shown = (key: string) => key === 'name' || key === 'protocol' || /^commands\/\d+\//.test(key)
  const inUse = model ? fleet.order.filter((d) => d.body.model === model.id).length : 0
  return (
    <Dialog title={model ? s.editModelTitle(model.name) : s.addModel} onClose={onClose} wide>
      <form ref={save.form} onSubmit={submit} noValidate aria-busy={save.busy.value} class="admin-form">
        <FormAlert failure={save.failure.value} shown={shown} />
        {inUse > 0 && <p class="note">{s.modelInUse(inUse)}</p>}
        <div class="form-grid">
          <TextField id="model-name" label={s.colName} value={name} onInput={(value) => {
              setName(value)
              save.edited('name')
            }} error={save.error('name')} required autofocus maxLength={100} />
          <SelectField
            id="model-protocol"
            label={s.protocol}
            value={protocol}
            onChange={(value) => {
              setProtocol(value)
              save.edited('protocol')
            }}
            options={[
              { value: '', label: s.noProtocol },
              ...PROTOCOLS.map((p) => ({ value: p, label: p })),
              // a label an older version let a model have: shown, and refused by the API until another is chosen
              ...(protocol !== '' && !PROTOCOLS.includes(protocol) ? [{ value: protocol, label: s.unsupportedProtocol(protocol) }] : []),
            ]}
            error={save.error('protocol')}
            hint={s.protocolHint}
          />
        </div>

        <h3 class="form-section">{s.commands}</h3>
        {commands.length === 0 && <p class="hint">{s.noCommandsYet}</p>}
        <ol class="command-drafts">
          {commands.map((c, i) => (
            <li key={c.key}>
              <CommandEditor
                draft={c}
                index={i}
                count={commands.length}
                errorOf={save.error}
                onEdited={(path) => save.edited(path)}
                failureFields={save.failure.value?.fields ?? {}}
                onChange={(change) => changeCommand(c.key, change)}
                onMove={(by) => move(i, by)}
                onRemove={() => {
                  setCommands((list) => list.filter((x) => x.key !== c.key))
                  // the paths of the commands after it move: their messages no longer match
                  save.failure.value = null
                }}
              />
            </li>
          ))}
        </ol>
        <button type="button" onClick={() => setCommands((list) => [...list, newCommand()])}>
          + {s.addCommand}
        </button>
        <FormButtons busy={save.busy.value} save={model ? s.save : s.addModel} onCancel={onClose} />
      </form>
    </Dialog>
  )
}

function CommandEditor({
  draft,
  index,
  count,
  errorOf,
  onEdited,
  failureFields,
  onChange,
  onMove,
  onRemove,
}: {
  draft: CommandDraft
  index: number
  count: number
  errorOf: (key: string) => string | undefined
  onEdited: (path: string) => void
  failureFields: Record<string, string>
  onChange: (change: Partial<CommandDraft>) => void
  onMove: (by: number) => void
  onRemove: () => void
}) {
  const id = `command-${draft.key}`
  const path = `commands/${index}`
  const title = draft.name.trim() || s.commandN(index + 1)
  // what the API said of this command that no field here shows
  const shownHere = new Set([
    `${path}/name`,
    `${path}/send`,
    `${path}/send/text`,
    `${path}/widget/fields`,
    ...draft.fields.flatMap((_, j) => [`${path}/widget/fields/${j}/name`, `${path}/widget/fields/${j}/pattern`]),
  ])
  const others = Object.entries(failureFields).filter(([key]) => key.startsWith(`${path}/`) && !shownHere.has(key))
  const setField = (key: number, change: Partial<FieldDraft>) => onChange({ fields: draft.fields.map((f) => (f.key === key ? { ...f, ...change } : f)) })
  const typeOptions = [
    { value: 'button', label: s.widgetButton },
    { value: 'form', label: s.widgetForm },
    ...(draft.type !== 'button' && draft.type !== 'form' ? [{ value: draft.type, label: s.widgetOther(draft.type) }] : []),
  ]

  return (
    <fieldset class="command-draft">
      <legend>{title}</legend>
      <div class="command-tools">
        <button type="button" class="small-button" onClick={() => onMove(-1)} disabled={index === 0} aria-label={s.moveUp(title)}>
          ↑
        </button>
        <button type="button" class="small-button" onClick={() => onMove(1)} disabled={index === count - 1} aria-label={s.moveDown(title)}>
          ↓
        </button>
        <button type="button" class="small-button danger-quiet" onClick={onRemove} aria-label={s.removeNamed(title)}>
          {s.remove}
        </button>
      </div>
      <div class="form-grid">
        <TextField id={`${id}-name`} label={s.commandName} value={draft.name} onInput={(name) => (onChange({ name }), onEdited(`${path}/name`))} error={errorOf(`${path}/name`)} required maxLength={100} />
        <SelectField id={`${id}-type`} label={s.widget} value={draft.type} onChange={(type) => onChange({ type })} options={typeOptions} hint={s.widgetHint} />
        <TextField
          id={`${id}-send`}
          label={s.sendText}
          value={draft.sendText}
          onInput={(sendText) => (onChange({ sendText }), onEdited(`${path}/send/text`))}
          error={errorOf(`${path}/send/text`) ?? errorOf(`${path}/send`)}
          hint={s.sendTextHint}
          mono
          maxLength={512}
        />
      </div>
      {draft.type === 'button' && (
        <div class="form-grid">
          <TextField id={`${id}-label`} label={s.buttonLabel} value={draft.label} onInput={(label) => onChange({ label })} hint={s.buttonLabelHint} maxLength={100} />
          <div class="field">
            <label class="check">
              <input type="checkbox" checked={draft.confirm} onChange={(e) => onChange({ confirm: e.currentTarget.checked })} />
              {s.askConfirm}
            </label>
            {draft.confirm && (
              <TextField
                id={`${id}-confirm`}
                label={s.confirmMessage}
                value={draft.confirmMessage}
                onInput={(confirmMessage) => onChange({ confirmMessage })}
                hint={s.confirmMessageHint}
                maxLength={200}
              />
            )}
          </div>
        </div>
      )}
      {draft.type === 'form' && (
        <div class="form-fields">
          <p class="hint">{s.formFieldsHint}</p>
          {errorOf(`${path}/widget/fields`) && <p class="field-error">{errorOf(`${path}/widget/fields`)}</p>}
          {draft.fields.map((f, j) => (
            <div class="form-field-row" key={f.key}>
              <TextField
                id={`${id}-field-${f.key}-name`}
                label={s.fieldName}
                value={f.name}
                onInput={(name) => (setField(f.key, { name }), onEdited(`${path}/widget/fields/${j}/name`))}
                error={errorOf(`${path}/widget/fields/${j}/name`)}
                required
                mono
                maxLength={64}
              />
              <SelectField
                id={`${id}-field-${f.key}-type`}
                label={s.fieldType}
                value={f.type}
                onChange={(type) => setField(f.key, { type })}
                options={(FIELD_TYPES as readonly string[]).includes(f.type) ? FIELD_TYPES.map((t) => ({ value: t, label: s.fieldTypes[t] })) : [{ value: f.type, label: f.type }, ...FIELD_TYPES.map((t) => ({ value: t, label: s.fieldTypes[t] }))]}
              />
              <TextField id={`${id}-field-${f.key}-label`} label={s.fieldLabel} value={f.label} onInput={(label) => setField(f.key, { label })} maxLength={100} />
              <button
                type="button"
                class="small-button danger-quiet"
                onClick={() => onChange({ fields: draft.fields.filter((x) => x.key !== f.key) })}
                aria-label={s.removeNamed(f.name || s.fieldN(j + 1))}
              >
                {s.remove}
              </button>
              <div class="field-pattern">
                <TextField
                  id={`${id}-field-${f.key}-pattern`}
                  label={s.fieldPattern}
                  value={f.pattern}
                  onInput={(pattern) => (setField(f.key, { pattern }), onEdited(`${path}/widget/fields/${j}/pattern`))}
                  error={errorOf(`${path}/widget/fields/${j}/pattern`)}
                  hint={s.fieldPatternHint}
                  mono
                  maxLength={200}
                />
              </div>
              <div class="field field-required">
                <label class="check">
                  <input id={`${id}-field-${f.key}-required`} type="checkbox" checked={f.required} onChange={(e) => setField(f.key, { required: e.currentTarget.checked })} />
                  {s.fieldRequired}
                </label>
                <p class="hint">{s.fieldRequiredHint}</p>
              </div>
            </div>
          ))}
          <button type="button" class="small-button" onClick={() => (onChange({ fields: [...draft.fields, newField()] }), onEdited(`${path}/widget/fields`))}>
            + {s.addField}
          </button>
        </div>
      )}
      {draft.type !== 'button' && draft.type !== 'form' && <p class="hint">{s.otherWidget}</p>}
      {others.map(([key, message]) => (
        <p class="field-error" key={key}>
          {key.slice(path.length + 1)}: {message}
        </p>
      ))}
    </fieldset>
  )
}
