import { useSignal } from '@preact/signals'
import { useEffect } from 'preact/hooks'
import { dateTimeOf } from '../admin'
import { ApiError, getJson } from '../api'
import { strings } from '../strings'
import { AdminTable, Cell, Pending } from './AdminParts'

const s = strings.admin

/** One identifier that tried to report and no device has (GET /devices/unknown). */
export interface UnknownIdentifier {
  identifier: string
  protocol: string
  first_seen: string
  last_seen: string
  attempts: number
  source: string
}

type State = { status: 'loading' } | { status: 'error'; message: string } | { status: 'shared'; message: string } | { status: 'ready'; value: UnknownIdentifier[] }

/**
 * What tried to report in the last 24 hours and was refused as unknown, each with a button that
 * opens the device form filled in. Read again when the fleet changes (a device added leaves the
 * list) and on Refresh. A server shared by accounts lists nothing (`listed: false`): said in a line.
 */
export function UnknownDevices({ version, onAdd }: { version: number; onAdd: (unknown: UnknownIdentifier) => void }) {
  const state = useSignal<State>({ status: 'loading' })
  const asked = useSignal(0)

  async function load() {
    const ask = ++asked.value
    try {
      const answer = await getJson<{ listed: boolean; identifiers: UnknownIdentifier[] }>('devices/unknown')
      if (ask !== asked.value) return
      state.value = answer.listed ? { status: 'ready', value: answer.identifiers } : { status: 'shared', message: s.unknownShared }
    } catch (error) {
      if (ask === asked.value) state.value = { status: 'error', message: error instanceof ApiError ? error.message : strings.networkDown }
    }
  }
  useEffect(() => void load(), [version])

  const current = state.value
  return (
    <section class="admin-unknown" aria-labelledby="admin-unknown-h">
      <div class="section-head">
        <div>
          <h3 id="admin-unknown-h">{s.unknownTitle}</h3>
          {current.status !== 'shared' && <p class="muted">{s.unknownIntro}</p>}
        </div>
        {current.status !== 'shared' && (
          <div class="section-actions">
            <button type="button" onClick={() => void load()}>
              {s.refresh}
            </button>
          </div>
        )}
      </div>
      {current.status === 'shared' ? (
        <p class="muted">{current.message}</p>
      ) : current.status !== 'ready' ? (
        <Pending state={current} onRetry={() => void load()} />
      ) : current.value.length === 0 ? (
        <p class="empty-note">{s.noUnknown}</p>
      ) : (
        <AdminTable columns={[s.colIdentifier, s.colProtocol, s.colLastSeen, s.colAttempts, s.colFrom]}>
          {current.value.map((u) => (
            <tr key={u.identifier}>
              <th scope="row" class="cell-name mono">
                {u.identifier}
              </th>
              <Cell label={s.colProtocol}>{s.protocolName(u.protocol)}</Cell>
              <Cell label={s.colLastSeen}>{dateTimeOf(u.last_seen)}</Cell>
              <Cell label={s.colAttempts}>{u.attempts}</Cell>
              <Cell label={s.colFrom} class="mono">
                {u.source}
              </Cell>
              <td class="row-actions">
                <button type="button" class="primary" aria-label={s.addUnknown(u.identifier)} onClick={() => onAdd(u)}>
                  {s.add}
                </button>
              </td>
            </tr>
          ))}
        </AdminTable>
      )}
    </section>
  )
}
