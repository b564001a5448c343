/**
 * The database, table by table. Datetimes are stored as integer Unix milliseconds and turned
 * into ISO strings at the edge; fix timestamps are Unix seconds like the API's.
 *
 * `positions` is declared here for Drizzle's benefit, but its migration makes it a
 * `WITHOUT ROWID` table keyed (device, ts): the primary key is the table, so a fix costs one
 * B-tree entry and a re-sent fix is a no-op (`INSERT OR IGNORE`).
 */
import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

const createdAt = () => integer('created_at').notNull().default(sql`(cast(unixepoch('subsec') * 1000 as integer))`)

export const accounts = sqliteTable('accounts', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  createdAt: createdAt(),
})

export const groups = sqliteTable(
  'groups',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull().references(() => accounts.id),
    name: text('name').notNull(),
  },
  (t) => [index('groups_account').on(t.accountId)],
)

export const users = sqliteTable(
  'users',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull().references(() => accounts.id),
    /** the sign-in name: unique across the server, compared case-insensitively (empty: cannot sign in) */
    name: text('name').notNull(),
    /** 'member' reaches the devices of their groups; 'admin' every device of the account, and manages it */
    role: text('role').notNull().default('member'),
    /** Bun.password (argon2id); null: no password, no sign-in */
    passwordHash: text('password_hash'),
    /** an IANA zone for the user's reports' day boundaries and local times (PATCH /me); null: UTC */
    timezone: text('timezone'),
    createdAt: createdAt(),
  },
  (t) => [index('users_account').on(t.accountId), uniqueIndex('users_name').on(sql`lower(${t.name})`).where(sql`${t.name} <> ''`)],
)

export const userGroups = sqliteTable(
  'user_groups',
  {
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    groupId: text('group_id').notNull().references(() => groups.id, { onDelete: 'cascade' }),
  },
  (t) => [primaryKey({ columns: [t.userId, t.groupId] }), index('user_groups_group').on(t.groupId)],
)

/** Only the SHA-256 of a key is kept; the plaintext is shown once when it is created. */
export const apiKeys = sqliteTable(
  'api_keys',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    hash: text('hash').notNull(),
    /** the key's id in the API (a UUID; the integer stays internal) */
    publicId: text('public_id'),
    name: text('name').notNull().default(''),
    /** written in the background, at most once a minute a key: a request never waits on a write */
    lastUsedAt: integer('last_used_at'),
    expiresAt: integer('expires_at'),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('api_keys_hash').on(t.hash), uniqueIndex('api_keys_public_id').on(t.publicId), index('api_keys_user').on(t.userId)],
)

/** Sign-in sessions of people: only the SHA-256 of the cookie's session id is kept. */
export const sessions = sqliteTable(
  'sessions',
  {
    idHash: text('id_hash').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    createdAt: createdAt(),
    lastUsedAt: integer('last_used_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [index('sessions_user').on(t.userId)],
)

/** Every administration change: who (a user id, or 'cli'), what, on which object, when. Never a secret. */
export const auditLog = sqliteTable(
  'audit_log',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    accountId: text('account_id').notNull(),
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    objectType: text('object_type').notNull(),
    objectId: text('object_id').notNull(),
    at: integer('at').notNull(),
    requestId: text('request_id'),
  },
  (t) => [index('audit_log_account_at').on(t.accountId, t.at)],
)

/**
 * Device models. `account_id` is the account a model made through the API belongs to (only its
 * devices may use it, only its admins see and change it); null for a server-wide model (the
 * built-in catalogue, imported models, the operator's), which every user reads and only the
 * operator changes (CLI, import).
 */
export const models = sqliteTable(
  'models',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    protocol: text('protocol'),
    accountId: text('account_id').references(() => accounts.id),
  },
  (t) => [index('models_account_name').on(t.accountId, t.name)],
)

export const commands = sqliteTable(
  'commands',
  {
    id: text('id').primaryKey(),
    modelId: text('model_id').notNull().references(() => models.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** the widget object exactly as imported, as JSON text */
    widget: text('widget').notNull(),
    /** keeps the model's commands in the order they were given */
    ordinal: integer('ordinal').notNull().default(0),
    /** the `send` object as imported (`{ text }`), as JSON text; null: the command cannot be sent */
    send: text('send'),
  },
  (t) => [index('commands_model').on(t.modelId, t.ordinal)],
)

/**
 * Commands sent to devices (POST /devices/{id}/commands/{commandId}), the delivery queue itself:
 * a row is written before the 202, so a restart loses nothing. `key` is the order they were made
 * in. `text` is what the API shows (password fields as ***); the real text waits in `payload`
 * only while the command may still go out (queued or sent), and is set to null when it reaches a
 * final status. No foreign key to `commands` or `users`: the record outlives a model's edit.
 */
export const sentCommands = sqliteTable(
  'sent_commands',
  {
    key: integer('key').primaryKey({ autoIncrement: true }),
    id: text('id').notNull(),
    deviceKey: integer('device_key').notNull().references(() => devices.key, { onDelete: 'cascade' }),
    commandId: text('command_id').notNull(),
    name: text('name').notNull(),
    /** the text as shown: every password field's value replaced by *** */
    text: text('text').notNull(),
    /** JSON `{ text, secrets }`: the text to deliver and the password values (masked in answers); null once final */
    payload: text('payload'),
    /** queued, sent, answered, expired, cancelled, failed */
    status: text('status').notNull(),
    userId: text('user_id'),
    createdAt: integer('created_at').notNull(),
    /** when it was last sent (a re-send moves it) */
    sentAt: integer('sent_at'),
    answeredAt: integer('answered_at'),
    /** a command still queued at this time expires */
    expiresAt: integer('expires_at').notNull(),
    response: text('response'),
    /** how many times it went out (1, or 2 after a re-send) */
    attempts: integer('attempts').notNull().default(0),
    /** the device reconnected while it waited for its answer: it goes out once more */
    resendDue: integer('resend_due', { mode: 'boolean' }).notNull().default(false),
  },
  (t) => [
    uniqueIndex('sent_commands_id').on(t.id),
    // a device's list (newest first) and its queue (oldest first, by status)
    index('sent_commands_device').on(t.deviceKey, t.status, t.key),
    index('sent_commands_device_key').on(t.deviceKey, t.key),
    // the sweep: queued or sent commands past their expiry
    index('sent_commands_status_expires').on(t.status, t.expiresAt),
  ],
)

export const devices = sqliteTable(
  'devices',
  {
    /** integer surrogate key: what the big tables (positions, events) carry */
    key: integer('key').primaryKey({ autoIncrement: true }),
    id: text('id').notNull(),
    accountId: text('account_id').notNull().references(() => accounts.id),
    /** null until the device first reports: then the built-in model of its protocol (src/ingest/pipeline.ts) */
    modelId: text('model_id').references(() => models.id),
    alias: text('alias').notNull(),
    properties: text('properties').notNull().default('{}'),
    serial: text('serial').notNull(),
    imei: text('imei').notNull(),
    iccid: text('iccid').notNull().default(''),
    state: text('state').notNull().default('new'),
    latitude: real('latitude'),
    longitude: real('longitude'),
    connected: integer('connected', { mode: 'boolean' }).notNull().default(false),
    connectedAt: integer('connected_at'),
    disconnectedAt: integer('disconnected_at'),
    createdAt: createdAt(),
    updatedAt: integer('updated_at').notNull().default(sql`(cast(unixepoch('subsec') * 1000 as integer))`),
  },
  (t) => [
    uniqueIndex('devices_id').on(t.id),
    index('devices_imei').on(t.imei),
    index('devices_serial').on(t.serial),
    index('devices_account').on(t.accountId),
    // the list order: lets a page stop after `limit` rows instead of sorting every device
    index('devices_alias').on(t.alias, t.id),
  ],
)

export const deviceGroups = sqliteTable(
  'device_groups',
  {
    groupId: text('group_id').notNull().references(() => groups.id, { onDelete: 'cascade' }),
    deviceKey: integer('device_key').notNull().references(() => devices.key, { onDelete: 'cascade' }),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.deviceKey] }), index('device_groups_device').on(t.deviceKey)],
)

/**
 * One row per fix. Compact fixed-point columns: lat/lon in 1e-7 degrees (1 cm), speed in
 * 0.1 km/h. `flags` bit 0 = the device said the fix is invalid. `attributes` is JSON or NULL.
 */
export const positions = sqliteTable(
  'positions',
  {
    device: integer('device').notNull(),
    ts: integer('ts').notNull(),
    lat: integer('lat').notNull(),
    lon: integer('lon').notNull(),
    speed: integer('speed'),
    course: integer('course'),
    altitude: integer('altitude'),
    satellites: integer('satellites'),
    flags: integer('flags').notNull().default(0),
    attributes: text('attributes'),
  },
  (t) => [primaryKey({ columns: [t.device, t.ts] })],
)

export const events = sqliteTable(
  'events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    device: integer('device').notNull(),
    ts: integer('ts').notNull(),
    alarmCode: text('alarm_code').notNull(),
    context: text('context').notNull().default('{}'),
    speed: integer('speed'),
    satellite: integer('satellite'),
    latitude: real('latitude'),
    longitude: real('longitude'),
    mcc: integer('mcc'),
    mnc: integer('mnc'),
    dbm: integer('dbm'),
    /**
     * Which event of its (device, second, code) this is. 0: the device's own alarm, so a re-sent
     * alarm (same device, second and code) lands on the same key and is stored once. 1, 2, …: the
     * events the server derives (rules, connection changes, commands), each its own row in the
     * order derived, at its true second. An import numbers a file's events of one (device, second,
     * code) from 0 in file order, so importing the file again stores nothing twice.
     */
    seq: integer('seq').notNull().default(0),
  },
  (t) => [uniqueIndex('events_device_ts_code_seq').on(t.device, t.ts, t.alarmCode, t.seq)],
)

/**
 * A device's latest status: what its status and information packets said about the device itself
 * (battery, external power, signal, ignition, ICCID, …), merged key by key, newest value wins.
 * One row a device, written by ingest in the batch that carried the packet.
 */
export const deviceStatus = sqliteTable('device_status', {
  deviceKey: integer('device_key')
    .primaryKey()
    .references(() => devices.key, { onDelete: 'cascade' }),
  /** JSON object of attribute → latest value */
  attributes: text('attributes').notNull().default('{}'),
  /** when the last status was committed, Unix ms */
  updatedAt: integer('updated_at').notNull(),
})

/**
 * Change counters kept by triggers, so that in-process caches notice changes made by any process
 * (an import). Row 1 (migration 0001): user_groups and device_groups, read by the access function
 * in the same statement as the device. Row 2 (migration 0002): a device's IMEI, serial, or
 * entering or leaving `unlink`, read by the ingest pipeline's device cache. Row 3 (migration
 * 0003): a device leaving a share link, or (migration 0015) a link revoked, read by the share token
 * cache and live streams. Row 4 (migration 0005):
 * credentials. Row 5 (migration 0008): geofences, read by the alert rules' geofence cache.
 */
export const accessVersion = sqliteTable('access_version', {
  id: integer('id').primaryKey(),
  version: integer('version').notNull(),
})

/** The fixed permission table a share link's `acl` draws from (seeded by a migration). */
export const permissions = sqliteTable('permissions', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  description: text('description').notNull(),
})

export const shareLinks = sqliteTable(
  'share_links',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull().references(() => accounts.id),
    /**
     * who made it: the link spends their stream and history budget, and ends with them (migration
     * 0015's triggers: the user deleted revokes it; a device they no longer reach leaves it, and
     * a link left with none is revoked). Null only on a revoked link whose creator was deleted.
     */
    createdBy: text('created_by').references(() => users.id, { onDelete: 'set null' }),
    /** the bearer token itself: the spec's list operation returns it */
    token: text('token').notNull(),
    shortCode: text('short_code').notNull(),
    /** JSON array of permission ids */
    acl: text('acl').notNull(),
    revoked: integer('revoked', { mode: 'boolean' }).notNull().default(false),
    expiresAt: integer('expires_at').notNull(),
    uniqueViews: integer('unique_views').notNull().default(0),
    lastAccessedAt: integer('last_accessed_at'),
    createdAt: createdAt(),
    updatedAt: integer('updated_at').notNull().default(sql`(cast(unixepoch('subsec') * 1000 as integer))`),
  },
  (t) => [
    uniqueIndex('share_links_token').on(t.token),
    uniqueIndex('share_links_short_code').on(t.shortCode),
    index('share_links_account').on(t.accountId),
    // a user's links: counted against MAX_SHARE_LINKS_PER_USER, and ended with the user's access (migration 0015)
    index('share_links_created_by').on(t.createdBy),
  ],
)

export const shareLinkDevices = sqliteTable(
  'share_link_devices',
  {
    linkId: text('link_id').notNull().references(() => shareLinks.id, { onDelete: 'cascade' }),
    deviceKey: integer('device_key').notNull().references(() => devices.key, { onDelete: 'cascade' }),
    ordinal: integer('ordinal').notNull().default(0),
  },
  // by device too: a device leaving its account leaves the account's links (dataset import)
  (t) => [primaryKey({ columns: [t.linkId, t.deviceKey] }), index('share_link_devices_device').on(t.deviceKey)],
)

/** One row per distinct viewer of a link: what `unique_views` counts. */
export const shareViewers = sqliteTable(
  'share_viewers',
  {
    linkId: text('link_id').notNull().references(() => shareLinks.id, { onDelete: 'cascade' }),
    viewer: text('viewer').notNull(),
    firstSeenAt: integer('first_seen_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.linkId, t.viewer] })],
)

/**
 * Geofences of an account (src/alerts/). `area` is the geometry as the API took it (JSON: a
 * GeoJSON Polygon, or `{ type: 'Circle', center: [lat, lon], radius }`); `groups` a JSON array of
 * group ids, empty for every device of the account. No foreign key on the groups: a deleted
 * group's id stays listed and matches no device, rather than the geofence silently widening to
 * every device. Changes bump access_version row 5 (migration 0008), read by the rules' cache.
 */
export const geofences = sqliteTable(
  'geofences',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull().references(() => accounts.id),
    name: text('name').notNull(),
    area: text('area').notNull(),
    groups: text('groups').notNull().default('[]'),
    /** km/h; null: no limit of its own */
    speedLimit: real('speed_limit'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('geofences_account_name').on(t.accountId, t.name, t.id)],
)

/**
 * What the alert rules remember of a device, written in the same transaction as the fixes that
 * change it: the newest valid fix seen (Unix seconds; an older one derives nothing), the
 * geofences it is inside (JSON array of ids), its overspeed episode, its ignition, online or not.
 */
export const alertStates = sqliteTable('alert_states', {
  deviceKey: integer('device_key')
    .primaryKey()
    .references(() => devices.key, { onDelete: 'cascade' }),
  lastFixTs: integer('last_fix_ts'),
  inside: text('inside').notNull().default('[]'),
  /** fix timestamp (s) the current continuous overspeed began; null: not over any limit */
  overspeedSince: integer('overspeed_since'),
  /** fix timestamp (s) of the last overspeed event of the current episode */
  overspeedReportedTs: integer('overspeed_reported_ts'),
  /** null: never reported */
  ignition: integer('ignition', { mode: 'boolean' }),
  /** timestamp (s) of the newest ignition reading: an older reading changes nothing */
  ignitionTs: integer('ignition_ts'),
  /** null: unknown (no transition seen yet) */
  online: integer('online', { mode: 'boolean' }),
  updatedAt: integer('updated_at').notNull(),
})

/**
 * Notification channels of an account (src/alerts/notifications*.ts): a webhook that receives
 * the account's events (`events`: JSON array of alarm codes, or ["*"]) or, with `positions`, every
 * stored fix. `groups` as geofences keep it: a JSON array of group ids, empty for every device of
 * the account; a deleted group's id stays and matches no device (never a silent widening).
 * `secret` is write-only in the API and never logged.
 */
export const notifications = sqliteTable(
  'notifications',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull().references(() => accounts.id),
    name: text('name').notNull(),
    events: text('events').notNull().default('[]'),
    groups: text('groups').notNull().default('[]'),
    /** every stored fix of the chosen devices, in batches, instead of events */
    positions: integer('positions', { mode: 'boolean' }).notNull().default(false),
    /** 'webhook', 'email' or 'telegram' */
    channelType: text('channel_type').notNull(),
    /** webhook: its URL; email: `mailto:` and the addresses, comma-separated; telegram: the chat id */
    url: text('url').notNull(),
    /** webhook: the HMAC key of X-Tracker-Signature (null: deliveries go unsigned); telegram: the bot token */
    secret: text('secret'),
    enabled: integer('enabled', { mode: 'boolean' }).notNull().default(true),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    /**
     * A user's own email alerts (PUT /me/email-alerts): an email channel to the address they gave,
     * matched against the devices they reach (src/alerts/outbox.ts), never shown by /notifications.
     * Null: an account channel the admins manage. One a user; it goes with the user.
     */
    userId: text('user_id').references(() => users.id, { onDelete: 'cascade' }),
  },
  (t) => [index('notifications_account_name').on(t.accountId, t.name, t.id), uniqueIndex('notifications_user').on(t.userId)],
)

/**
 * The outbox: one row a delivery (an event to one channel, or a batch of one channel's fixes),
 * written in the same transaction as the event or fixes it carries and kept until delivered or
 * dead, so a restart loses nothing (src/alerts/outbox.ts writes it, delivery.ts sends it). `key`
 * is the order of writing (positions go out in it, per channel); `id` is the X-Tracker-Delivery
 * header, the same on every retry. `payload` is JSON: the event as sent, or the array of fixes
 * (cleared once delivered or dead; `fixes` keeps the count).
 */
export const notificationDeliveries = sqliteTable(
  'notification_deliveries',
  {
    key: integer('key').primaryKey({ autoIncrement: true }),
    id: text('id').notNull(),
    notificationId: text('notification_id')
      .notNull()
      .references(() => notifications.id, { onDelete: 'cascade' }),
    /** 'event', 'positions' or 'test' */
    kind: text('kind').notNull(),
    deviceKey: integer('device_key'),
    payload: text('payload'),
    /** positions: how many fixes the batch holds */
    fixes: integer('fixes'),
    /** 'pending', 'delivered' or 'dead' */
    status: text('status').notNull(),
    attempts: integer('attempts').notNull().default(0),
    lastStatusCode: integer('last_status_code'),
    lastError: text('last_error'),
    /** Unix ms; pending only */
    nextAttemptAt: integer('next_attempt_at'),
    createdAt: integer('created_at').notNull(),
    deliveredAt: integer('delivered_at'),
  },
  (t) => [
    uniqueIndex('notification_deliveries_id').on(t.id),
    // a channel's log, newest first
    index('notification_deliveries_notification').on(t.notificationId, t.key),
    // the worker, channel by channel: its event deliveries due first; its oldest pending batch of fixes
    index('notification_deliveries_channel_due').on(t.notificationId, t.kind, t.status, t.nextAttemptAt),
    index('notification_deliveries_head').on(t.notificationId, t.kind, t.status, t.key),
    // outbox depth and oldest pending (metrics), and pruning old delivered and dead rows
    index('notification_deliveries_status_created').on(t.status, t.createdAt),
  ],
)

/**
 * Scheduled reports (issue 24, contracts/reports.md "Scheduled reports"): a report of `kind` over
 * the owner's devices and groups, for the period just ended (`period`: day, week Monday–Sunday, or
 * month, in `tz`), produced at `at` (local `HH:MM`) and sent to `recipients` (JSON array of
 * addresses) by email and/or POSTed to the webhook channel `webhook_id`. Produced as `user_id`
 * (its reach at the time of sending); it goes with its user.
 */
export const reportSchedules = sqliteTable(
  'report_schedules',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    kind: text('kind').notNull(),
    /** JSON arrays of ids */
    devices: text('devices').notNull().default('[]'),
    groups: text('groups').notNull().default('[]'),
    period: text('period').notNull(),
    at: text('at').notNull(),
    tz: text('tz').notNull(),
    format: text('format').notNull(),
    recipients: text('recipients').notNull().default('[]'),
    webhookId: text('webhook_id').references(() => notifications.id, { onDelete: 'set null' }),
    enabled: integer('enabled', { mode: 'boolean' }).notNull().default(true),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('report_schedules_account_name').on(t.accountId, t.name, t.id), index('report_schedules_user').on(t.userId)],
)

/**
 * One report sent (or being sent) for a schedule's period. `period_key` (`<schedule>/<from>`) makes
 * the scheduled run of a period unique: it is written before the report is sent, so a restart or a
 * second node never sends it again; a run asked for by hand (POST …/run) has none.
 */
export const reportRuns = sqliteTable(
  'report_runs',
  {
    id: text('id').primaryKey(),
    scheduleId: text('schedule_id')
      .notNull()
      .references(() => reportSchedules.id, { onDelete: 'cascade' }),
    periodKey: text('period_key'),
    /** Unix seconds: the period's first second and the first second after it */
    periodFrom: integer('period_from').notNull(),
    periodTo: integer('period_to').notNull(),
    /** 'queued', 'sent' or 'failed' */
    status: text('status').notNull(),
    attempts: integer('attempts').notNull().default(0),
    error: text('error'),
    /** Unix ms */
    nextAttemptAt: integer('next_attempt_at'),
    createdAt: integer('created_at').notNull(),
    sentAt: integer('sent_at'),
  },
  (t) => [uniqueIndex('report_runs_period').on(t.periodKey), index('report_runs_schedule').on(t.scheduleId, t.createdAt), index('report_runs_due').on(t.status, t.nextAttemptAt)],
)
