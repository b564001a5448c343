/** The list's filters (they apply to the map too); kept while the person visits other views. */
import { computed, signal } from '@preact/signals'
import { getJson } from './api'
import type { FleetDevice } from './fleet'
import type { Group } from './types'

export const query = signal('')
export const groupId = signal('')
export const stateFilter = signal('')
/** the groups the person may filter by (GET /groups); empty when they have none or may not list them */
export const groups = signal<Group[]>([])

let groupsLoaded = false
/** moves at sign-out, so that an answer for the person before is dropped */
let generation = 0
export async function loadGroups() {
  if (groupsLoaded) return
  groupsLoaded = true
  const asked = generation
  try {
    const list: Group[] = []
    for (let offset = 0; ; offset += 1000) {
      const page = await getJson<Group[]>(`groups?limit=1000&offset=${offset}`)
      list.push(...page)
      if (page.length < 1000) break
    }
    if (asked === generation) groups.value = list
  } catch {
    if (asked !== generation) return
    groupsLoaded = false
    groups.value = []
  }
}

/** at sign-out: the next person starts with no filter and their own groups */
export function forgetFilters() {
  resetFilters()
  generation++
  groupsLoaded = false
  groups.value = []
}

export function resetFilters() {
  query.value = ''
  groupId.value = ''
  stateFilter.value = ''
}

export const filtering = computed(() => query.value.trim() !== '' || groupId.value !== '' || stateFilter.value !== '')

/** the filters as one test; a new function whenever a filter changes */
export const predicate = computed<(device: FleetDevice) => boolean>(() => {
  // the whole query within one field (name, IMEI, serial, plate): "truck 2" is not "2" anywhere
  const text = query.value.trim().toLowerCase().replace(/\s+/g, ' ')
  const group = groups.value.find((g) => g.id === groupId.value)
  const members = group ? new Set(group.devices) : null
  const state = stateFilter.value
  return (device) =>
    (state === '' || device.state === state) && (members === null || members.has(device.id)) && (text === '' || device.haystack.includes(text))
})
