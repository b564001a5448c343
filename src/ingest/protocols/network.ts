/**
 * Cell towers and Wi-Fi access points a device reported without a fix, as device status
 * attributes. Flat keys whose values are replaced whole (an array is never merged with an older
 * one): `cells`, `wifi`, `network_time` (the device's time of the measurement, Unix seconds, when
 * it sent one), `timing_advance`.
 */
export interface NetworkReport {
  timestamp?: number
  cells: readonly unknown[]
  wifi?: readonly unknown[]
  timing_advance?: number
}

export function networkStatus(network: NetworkReport | null | undefined): Record<string, unknown> {
  if (!network) return {}
  const status: Record<string, unknown> = { cells: network.cells }
  if (network.wifi && network.wifi.length > 0) status.wifi = network.wifi
  if (network.timestamp !== undefined) status.network_time = network.timestamp
  if (network.timing_advance !== undefined) status.timing_advance = network.timing_advance
  return status
}
