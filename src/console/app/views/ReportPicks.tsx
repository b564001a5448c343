/**
 * The devices and groups a report is of: a box of ticks for each (the groups' only when there
 * are some). The Reports page's form and a scheduled report's form both choose with it.
 */
import { groups } from '../filters'
import type { Fleet } from '../fleet'
import { strings } from '../strings'

const s = strings.reports

const toggle = (list: string[], id: string, on: boolean) => (on ? [...list, id] : list.filter((x) => x !== id))

export function ReportPicks({
  fleet,
  name,
  devices,
  groups: chosenGroups,
  onDevices,
  onGroups,
}: {
  fleet: Fleet
  /** the checkboxes' names: `${name}-device`, `${name}-group` */
  name: string
  devices: string[]
  groups: string[]
  onDevices: (next: string[]) => void
  onGroups: (next: string[]) => void
}) {
  return (
    <>
      <fieldset class="report-picks">
        <legend>{s.devices}</legend>
        <div class="report-pick-list">
          {fleet.order.map((d) => (
            <label key={d.id} class="check">
              <input type="checkbox" name={`${name}-device`} value={d.id} checked={devices.includes(d.id)} onChange={(e) => onDevices(toggle(devices, d.id, e.currentTarget.checked))} />
              {d.body.alias}
            </label>
          ))}
        </div>
      </fieldset>
      {groups.value.length > 0 && (
        <fieldset class="report-picks">
          <legend>{s.groups}</legend>
          <div class="report-pick-list">
            {groups.value.map((g) => (
              <label key={g.id} class="check">
                <input type="checkbox" name={`${name}-group`} value={g.id} checked={chosenGroups.includes(g.id)} onChange={(e) => onGroups(toggle(chosenGroups, g.id, e.currentTarget.checked))} />
                {g.name}
              </label>
            ))}
          </div>
        </fieldset>
      )}
    </>
  )
}
