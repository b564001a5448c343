/** The string formats the dataset schema uses, registered once with TypeBox. */
import { FormatRegistry } from '@sinclair/typebox'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const ISO_DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i

export function registerFormats(): void {
  if (!FormatRegistry.Has('uuid')) FormatRegistry.Set('uuid', (value) => UUID.test(value))
  if (!FormatRegistry.Has('date-time')) FormatRegistry.Set('date-time', (value) => ISO_DATETIME.test(value) && !Number.isNaN(Date.parse(value)))
}
