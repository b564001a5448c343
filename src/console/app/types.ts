/** The API's shapes the console reads (see the OpenAPI document at /openapi). */
export type DeviceState = 'off' | 'moving' | 'stopped' | 'suspended' | 'unlink' | 'stolen' | 'new'

export interface Device {
  id: string
  /** null until the device first reports: then the built-in model of its protocol */
  model: string | null
  alias: string
  properties: Record<string, unknown>
  serial: string
  imei: string
  iccid: string
  state: DeviceState
  location: [number, number] | null
  connected: boolean
  connected_at: string | null
  disconnected_at: string | null
  created_at: string
  updated_at: string
}

/** GET /devices/{id}/status: what the device's status packets said, and the place of its location */
export interface DeviceStatus {
  id: string
  attributes: Record<string, unknown>
  updated_at: string | null
  /** "City, CC" of the device's location; null without one */
  address: string | null
}

/** `event: status` of GET /devices/stream: the attributes one packet gave */
export interface StatusEvent {
  id: string
  attributes: Record<string, unknown>
  updated_at: string
}

export interface Me {
  kind: 'user'
  id: string
  name: string
  role: 'admin' | 'member'
  account: { id: string; name: string }
}

export interface Group {
  id: string
  name: string
  devices: string[]
}

/** `event: fix` of GET /devices/stream */
export interface FixEvent {
  id: string
  latitude: number
  longitude: number
  speed: number | null
  /** degrees from north, when the device reports it */
  course?: number | null
  timestamp: number
}

export interface RoutePoint {
  latitude: number
  longitude: number
  speed: number
  timestamp: number
}

export interface DeviceEvent {
  alarm_code: string
  speed: number | null
  satellite: number | null
  dbm: number | null
  coordinates: [number, number] | null
  timestamp: number
  /** what the event carries: a geofence's `name`, an overspeed's `speed` and `limit`… */
  context?: Record<string, unknown>
}

export type Widget =
  | { type: 'button'; label: string; confirm?: boolean; confirm_message?: string }
  | { type: 'form'; fields: { name: string; type: string; label: string }[] }
  | { type: string; [key: string]: unknown }

export interface Command {
  id: string
  name: string
  widget: Widget
}

// ---- share links (GET /devices/share and /devices/share/{id}; POST /devices/share)

/** A share link: the list shape (token, original_url) and, from GET /devices/share/{id}, its short_url */
export interface ShareLink {
  id: string
  account: string
  devices: string[]
  acl: string[]
  revoked: boolean
  expires_at: string
  unique_views: number
  last_accessed_at: string | null
  created_at: string
  token?: string
  original_url?: string
  short_url?: string
}

export interface ShareCreated {
  id: string
  token: string
  devices: string[]
  expires_at: string
  original_url: string
  short_url: string
}

// ---- alerts (`event: alarm` of GET /devices/stream; GET /events)

/** `event: alarm` of GET /devices/stream: a device's alarm, once stored */
export interface AlarmEvent {
  /** the device's id */
  id: string
  alarm_code: string
  timestamp: number
  latitude: number | null
  longitude: number | null
  speed: number | null
  /** as GET /events shows it */
  context?: Record<string, unknown>
}

/** an item of GET /events: the device's event, with the device */
export interface FleetEvent extends DeviceEvent {
  device: { id: string; alias: string }
  /** "City, CC" from the server's offline geocoder; null without coordinates */
  address: string | null
}

// ---- History (GET /devices/{id}/history/route and /history/travels)

export interface HistoryStop {
  latitude: number
  longitude: number
  /** seconds */
  duration: number
  start: number
  end: number
}

/** a span without data after which the device was elsewhere: the route is not joined across it */
export interface HistoryGap {
  /** the last fix before the silence */
  start: number
  /** the first fix after it */
  end: number
  /** seconds */
  duration: number
  /** metres between those two fixes, in a straight line */
  displacement: number
}

export interface HistoryRoute {
  points: RoutePoint[]
  stops: HistoryStop[]
  /** metres of movement */
  total_distance: number
  /** seconds from the first point to the last */
  total_duration: number
  /** left out when there is none */
  gaps?: HistoryGap[]
}

export interface HistoryPlace {
  latitude: number
  longitude: number
  timestamp: number
  address: string
}

export interface HistoryTravel {
  start: HistoryPlace
  end: HistoryPlace
  /** metres */
  distance: number
  /** seconds */
  duration: number
  /** km/h */
  max_speed: number
  avg_speed: number
}

export interface HistoryTravels {
  travels: HistoryTravel[]
  total_travels: number
  total_distance: number
  total_duration: number
}

// ---- the Administration view's shapes (GET /users, /groups, /users/{id}/keys, /models, /audit)

export interface AdminUser {
  id: string
  name: string
  role: 'admin' | 'member'
  groups: string[]
  created_at: string
}

export interface AdminGroup {
  id: string
  name: string
  devices: string[]
  users: string[]
}

export interface ApiKey {
  id: string
  name: string
  created_at: string
  last_used_at: string | null
  expires_at: string | null
}

export interface DeviceModel {
  id: string
  name: string
  protocol: string | null
  /** each with its widget as written, and whatever else the server keeps (kept as it is on a change) */
  commands: (Command & Record<string, unknown>)[]
  /** the account it belongs to (its admins change it); null: server-wide, read-only over the API */
  account: string | null
}

export interface AuditEntry {
  id: number
  actor: string
  action: string
  object_type: string
  object_id: string
  at: string
  request_id: string | null
}

// ---- Notifications (GET /notifications, /notifications/{id}/deliveries; views/AdminNotifications.tsx)

/** a notification channel: which events (or every fix) go to which webhook, for which devices */
export interface NotificationChannel {
  id: string
  name: string
  /** alarm codes, `["*"]` for every event, `[]` for a positions channel */
  events: string[]
  /** only devices of these groups; `[]`: every device of the account */
  groups: string[]
  /** the secret itself is never sent: `secret_set` says whether there is one */
  channel:
    | { type: 'webhook'; url: string; secret_set: boolean; positions: boolean }
    | { type: 'email'; to: string[] }
    | { type: 'telegram'; chat_id: string; bot_token_set: boolean }
  enabled: boolean
  created_at: string
  updated_at: string
}

export type DeliveryStatus = 'pending' | 'delivered' | 'dead'

/** an item of GET /notifications/{id}/deliveries, and the answer of POST /notifications/{id}/test */
export interface NotificationDelivery {
  id: string
  type: 'event' | 'positions' | 'test'
  event: FleetEvent | null
  /** how many fixes a positions batch holds */
  positions: number | null
  status: DeliveryStatus
  attempts: number
  last_status_code: number | null
  last_error: string | null
  next_attempt_at: string | null
  delivered_at: string | null
  created_at: string
}

// ---- Geofences (GET /geofences; views/AdminGeofences.tsx, geofence*.ts)

/** GeoJSON: rings of [longitude, latitude], each closed (the last point repeats the first), the outer ring first */
export interface PolygonArea {
  type: 'Polygon'
  coordinates: [number, number][][]
}

/** not GeoJSON: the centre is [latitude, longitude]; the radius in metres */
export interface CircleArea {
  type: 'Circle'
  center: [number, number]
  radius: number
}

export type GeofenceArea = PolygonArea | CircleArea

export interface Geofence {
  id: string
  name: string
  area: GeofenceArea
  /** empty: every device of the account */
  groups: string[]
  /** km/h, null when none */
  speed_limit: number | null
  created_at: string
}
