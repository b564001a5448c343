/**
 * The API's own description in the OpenAPI document: every decision the interface spec leaves
 * open, stated where an API user looks first. Keep it in step with README.md. The device
 * protocols are named from their units (ingest/protocols).
 */
import { PROTOCOLS } from '../ingest/protocols'
import { DEVICE_ALARM_CODES } from '../ingest/protocols/events'

/** what each protocol's command texts split on, as its unit declares it (protocols/<name>/command.ts) */
const COMMAND_SEPARATORS = PROTOCOLS.flatMap((p) => (p.transport === 'tcp' && p.commandSeparators ? [`${p.name} ${p.commandSeparators.map((c) => `\`${c}\``).join(' ')}`] : [])).join(', ')

export const API_DESCRIPTION = `
Self-hosted GPS fleet tracking. Every error is RFC 9457 problem details
(\`application/problem+json\`: \`type\`, \`title\`, \`status\`, \`detail\`, and \`errors[]\` with
\`path\` and \`message\` on validation failures). Invalid parameters are **400**, never 422; a
malformed UUID in a path is 400. UUIDs are case-insensitive: an upper-case id in a path names the
same record, and answers show ids in lower case.

**Authentication.** \`Authorization: Bearer <key>\` on every endpoint under /devices: an API key
(\`cli key create --user ID\`) or a share token. Missing, malformed or unknown → 401 with
\`WWW-Authenticate: Bearer realm="tracker"\` (plus \`error="invalid_token"\` when a token was sent).
Authentication is decided before anything else of the request is validated or its body read.
Repeated unknown tokens from one client are slowed down (from the 6th failure, 10 ms more each,
at most 200 ms) and after 20 failures within 60 s refused with 429 and \`Retry-After\`. A valid key
or token is always served, and a success does not clear the count. The client is the socket's
peer, or behind a proxy named in \`TRUSTED_PROXIES\` the right-most \`X-Forwarded-For\` address that
is not one; it is counted by its IPv4 address or its IPv6 /64. A device you cannot reach is 404,
never 403.

**Bodies.** JSON, whatever the \`Content-Type\` says; at most 1 MiB (413) and 16 levels of nesting
(400). The request line and headers may take 16 KiB (431 beyond). A validation answer lists at most
20 field errors.
\`X-ACT\` / \`X-Dev\` request headers are ignored: the shared-link context is derived from the token.

**Conventions.** Distances in metres, durations in seconds, speeds in km/h. Coordinates are WGS84
\`[latitude, longitude]\`. Datetimes are ISO 8601 UTC with milliseconds and \`Z\`; \`from\`, \`to\`,
\`timestamp\`, \`start\` and \`end\` are integer Unix seconds. \`location\`, \`connected_at\` and
\`disconnected_at\` are null when never set. Unknown query parameters are ignored; unknown body
fields are rejected (400).

**GET /devices.** \`groups\` (repeat it or separate with commas), \`limit\` 1–1000 (default 99),
\`offset\` ≥ 0 (default 0). Stable order: alias, then id. Devices in state \`unlink\` are never
listed (they can still be read by id). An empty page is 404, as the spec says.

**History.** \`from\` and \`to\` are required integer Unix seconds, \`from\` ≤ \`to\`, at most 31 days
apart, both inclusive; anything else is 400. A window without data is 200 with empty lists and zero
totals. Route points are every stored fix in time order (a point whose device sent no speed gets
one from the previous fix). Impossible fixes (out of range, 0/0, a jump faster than 500 km/h)
stay in the points but count in neither distances nor stops. A stop is a span of at least
\`stop_threshold_time\` seconds (default 300; 0 means every stand of 10 s or more) during which the
device stays within 10 m of where it stands, a gap in reporting included; stands at the same place
(within 30 m) are merged first. GPS jitter while standing is not movement; slow movement (a walker)
is. Travels are the movements between stops; \`travels\` also takes \`stop_threshold_time\`.
Silence is not driving: a silence longer than \`gap_threshold_time\` (route and travels; default
3600 s, at least 60) after which the device reports from farther than 30 m from where it went quiet
is a gap: the travel before it ends at the last fix before the silence, the next starts at the first
fix after it, and its time and its jump count in no travel and no distance (within 30 m it is part of
a stop). The route lists such gaps in \`gaps\` (\`start\`, \`end\`, \`duration\`, \`displacement\` in
metres), a field left out when there is none.
\`total_distance\` (metres of movement) is the same number for the route and the travels, whatever
the threshold, and the travels' distances add up to it. Route \`total_duration\` is last − first
point; travels \`total_duration\` sums the travels. \`max_speed\` is the highest reported speed (or,
without any, the highest over 10 s and 50 m); \`avg_speed\` = distance / duration, in km/h. Place
\`address\`: "City, CC" from a world-cities table shipped with the server, or a street address when
\`GEOCODER_URL\` answers within its timeout and the server's request budget for it allows (by default one
request a second, two in flight; over budget, the offline answer at once). Events come in time order.
One user may have at most 2 route or travels requests in flight, whatever key or session, and
through every share link they made (a share token spends its creator's budget); a route counts
until its body has been sent. More are 429 with \`Retry-After: 1\`. The server holds at most
\`HISTORY_MEMORY_MB\` (64 MiB) of them, reckoned from each window's fixes: more wait their turn (at
most 5 s, at most 64 waiting), then 503 with \`Retry-After: 1\`. A long route's body is sent in chunks (chunked transfer, no Content-Length).

**Reports.** \`GET /reports/{trips|stops|summary|events|route}\`: many devices (\`devices\`, \`groups\`;
neither: every device you reach, at most 1,000) over up to 31 days, in JSON \`{ rows, totals,
generated_at, period, tz }\`. Trips and stops are the history API's travels and stops, by the same
analysis: their distances, durations and counts equal its answers. \`tz\` is an IANA zone (default your
\`timezone\`, set with PATCH /me; else UTC). Users only: a share token gets 403. Files: \`format=\`
(or Accept) csv or xlsx for every kind, gpx or kml for routes, as an attachment.
\`/reports/schedules\`: a report of the previous day, week (Monday–Sunday) or month in \`tz\`, sent at
\`at\` (local) once per period (recorded before sending: never twice, across restarts and nodes) as
the schedule's owner, mailed as an attachment through SMTP_URL and/or POSTed as the file to a webhook
channel; retried 24 h, then \`failed\` in \`/reports/schedules/{id}/runs\` (README, Scheduled reports).

**Share links.** \`devices\` holds 1–1,000 distinct ids you can reach (else 404); \`ttl\` is an
integer from 60 to 31,536,000 seconds; the token is 256 random bits, base64url. \`acl\` holds ids
from a fixed permission table: \`a3c1f6d0-2b7e-4f5a-8c9d-000000000001\` location (device list,
detail, live stream), \`…0002\` history (route, travels), \`…0003\` events; without \`acl\` a link
grants all three, and a shared caller lacking one gets 403. The list holds the account's active
links, newest first; \`GET /devices/share/{id}\` also shows revoked and expired ones (plus
\`short_url\`); \`PATCH\` sets only what it is sent (\`ttl\` → expires_at = now + ttl; a revoked link
stays revoked); \`DELETE\` revokes (204). Another account's link is 404; managing links with a
share token is 403. A share token reads its link's devices as its acl allows; expired or revoked
→ 401; every change applies from the next request. A link ends with its creator: deleting the
user revokes it; a device they no longer reach leaves it for good (a link left with none is
revoked). A user may have made at most \`MAX_SHARE_LINKS_PER_USER\` (100) active links: one more,
or a \`ttl\` reviving an expired one beyond that, is 409. Live streams: 16 per user (keys, sessions
and their links' tokens together), 429 beyond; \`MAX_STREAMS\` (2,000) per server, 503 beyond. \`unique_views\` counts distinct viewers (the
page's viewer cookie, else client address + user agent), best-effort: a read with a share token
writes nothing, its view is written in the background (at most 1,000 new viewers a link between two
writes) and shows in a link read at once. \`GET /s/{code}\` → 302 to
\`original_url\` while the link is active, else 404 (a browser, \`Accept\` naming \`text/html\`, gets
the page \`original_url\` would show: 410 once the link has ended). \`original_url\` is an HTML page (410 once the
link has ended). \`GET /devices/stream\` is Server-Sent Events: \`event: fix\` with
\`{id, latitude, longitude, speed, course, timestamp}\` (course in degrees or null), starting with each device's newest fix (held in memory,
else the newest stored), ending when a share link changes or ends; and \`event: alarm\` with
\`{id, alarm_code, timestamp, latitude, longitude, speed}\` for each device event once it is stored (a share link's
stream only with the events permission). \`GET /events\` lists the events of every device you reach, newest first.

**Administration.** \`GET /me\` (any key, session or share token) says who the credential is.
\`/groups\`, \`/users\` and \`/audit\` are for account admins (a member gets 403, except \`GET /groups\`:
their own groups); \`/users/{id}/keys\` for that user or an admin; a share token gets 403 on all of
them. Another account's user, group or key is 404, and so is an id named in a body that is not of
your account, with \`errors[].path\` naming its place (\`/devices/2\`). A sign-in name taken in any
case, or demoting or deleting the account's last admin, is 409. Passwords (write-only, ≥ 10
characters) are argon2id hashes; a new one ends the user's sessions. Any user changes their own
with \`PATCH /me\` \`{current_password, password}\`: a wrong current password is 403 and counts as a
failed sign-in; the user's other sessions end, the request's own lives on. A key's secret is shown once;
a deleted key or user is 401 on the next request. \`last_used_at\` is written in the background at
most once a minute a key. Lists: \`limit\` 1–1000 (default 99), \`offset\`, by name then id, \`[]\`
when empty. \`/audit\`: newest first; \`from\`/\`to\` Unix seconds, inclusive; never a secret.

**Geofences** (any user of the account reads, admins write). \`area\` is a GeoJSON Polygon
(\`[longitude, latitude]\`, closed rings, at most 1,000 points, not self-intersecting; an edge more
than 180° wide crosses the antimeridian the short way round; a ring around a pole is refused) or
\`{ "type": "Circle", "center": [latitude, longitude], "radius": 10–100000 }\` (great-circle
metres); a fix on the boundary (within 1 cm) is inside; bad geometry is 400 naming the place. An
account has at most 1,000 geofences (the server's \`MAX_GEOFENCES_PER_ACCOUNT\`; one more is 409,
nothing stored) and a polygon at most 1,000 points (\`MAX_GEOFENCE_VERTICES\`; more is 400 at
\`/area/coordinates\`); a geofence stored under a higher limit is kept as it is. One report's
geofence work is bounded: past 1,000 geofence events, or about a million units of tests, its
fixes are tested only at its newest (the crossings in between dated there). The
derived events, stored like device alarms: \`geofence_enter\`/\`geofence_exit\` \`{ geofence, name }\`
(the first fix a device ever sends inside is an enter; a deleted geofence gives no exit);
\`overspeed\` \`{ limit, speed, geofence? }\` above the lowest applicable limit (\`properties.speed_limit\`,
the geofences' \`speed_limit\`), then again every 5 minutes of continuous overspeed by fix time;
\`ignition_on\`/\`ignition_off\` on a change of the \`ignition\` attribute (the first reading is not one);
\`device_offline\` on a disconnection, \`device_online\` on reporting after one. Fixes count by
timestamp: a late or invalid fix derives nothing. Each derived event is stored at its own second,
however many of its code share it (one fix entering two overlapping geofences, a device that
reconnects several times in a second); a device's own alarm re-sent with the same second and code
is one event, and is never merged with a derived one.

**Notifications** (admins; a member or share token gets 403). A channel is an email channel
(\`channel: { type: "email", to: [addresses] }\`, through the server's SMTP_URL from SMTP_FROM;
without SMTP_URL it is 400), a Telegram chat (\`{ type: "telegram", chat_id, bot_token }\`, the
token write-only: \`bot_token_set\`), each telling people of the account's events in words (the
vehicle, the event as the console words it, the time in UTC, the "City, CC" and a console link),
or a webhook for the
account's events (\`events\`: alarm codes or \`["*"]\`) or, with \`channel.positions: true\`, every
stored fix (\`positions\`: \`device\` is the device id, up to 500 a batch, in order per device;
a fix the device flagged invalid, or at 0/0, is sent too, with \`"valid": false\` in its \`attributes\`),
narrowed by \`groups\` (a deleted group matches no device). Deliveries are written to an outbox in
the transaction of their event or fix and sent at least once: \`X-Tracker-Delivery\` (the same on
retries), \`X-Tracker-Signature: t=…,v1=…\` when a secret is set (else unsigned); a 2xx within
10 s is delivered, redirects are not followed (a 3xx fails), retries after 10 s doubling to 1 h
for 24 h, then \`dead\`; delivered and dead ones are kept 7 days. Tenants apart: at most 10
attempts at once; while several accounts have deliveries due each gets an equal share (10 ÷
accounts, rounded up; a free slot goes to the account with the fewest under way), an account
alone at most 8 (2 stay free for another's), a channel at most 4; a channel whose attempt times
out holds one slot until it answers, such channels half of the slots together, and after its n-th
timeout in a row its pending deliveries wait 10 s doubling to 1 h (their \`next_attempt_at\` says
so). So one account's hanging receivers never hold another account's deliveries for their
timeouts. Secrets are write-only (\`secret_set\`; in PATCH absent keeps, null removes) and at
least 16 bytes in UTF-8 when sent (400); a shorter one set before that rule keeps working. URLs are
http(s) without credentials; loopback, private, link-local and other special-purpose addresses
(and \`localhost\`) are 400 at creation, also after resolving the name (a name that does not
resolve yet is accepted), and refused at each attempt after resolving again (plain http then
connects to the checked address), unless the server runs with \`WEBHOOK_ALLOW_PRIVATE=1\`.
\`POST /notifications/{id}/test\` answers 200 with the outcome (\`delivered\` or \`dead\`).

**Your own email alerts** (any signed-in user; a share token gets 403). \`GET /me/email-alerts\`
and \`PUT /me/email-alerts\` \`{ events, address?, enabled }\`: the events (known alarm codes,
each once; an unknown one is 400) a user is told of by email at their own address (required the
first time). A mail goes out only for a device the user reaches at the time of the event (the
access function: a change of their groups or role counts from the next event). Enabling without
\`SMTP_URL\` is 400 (email is not configured on this server); \`email_configured\` in the answer
says so. They are the user's: \`/notifications\` neither lists nor touches them, and they go
with the user.

**Signing in (people, the console).** \`POST /session\` \`{name, password}\` (the name in any case)
answers \`{user}\` and sets the \`tracker_session\` cookie (HttpOnly, SameSite=Strict, Path=/, Secure
when APP_URL is https or the request came over https, Max-Age 14 days), which then authenticates every route as the user's key
would, when no Authorization header is sent. A change made with the cookie must carry an \`Origin\`
(or \`Referer\`) equal to the address the request was sent to (its scheme and \`Host\`, so the console
works at whatever address it was opened: \`http://192.168.1.20:3000\`; behind TRUSTED_PROXIES, their
\`X-Forwarded-Proto\` and \`X-Forwarded-Host\`) or, when APP_URL is set, to APP_URL's origin; else 403,
its detail naming where to open the console. A browser's \`POST /session\` from another origin is 403 too.
A wrong name and a wrong password get the same 401. Each attempt is counted as a failure before
its password is checked (given back when it was right): with bad keys, 20 in 60 s from one client,
and 50 in 60 s at one name from anywhere; past either, 429 with \`Retry-After\`, at once and
without checking a password. A client may have 4 checks in flight (429 beyond); the server runs 2
at once with 32 waiting (503 with \`Retry-After: 1\` beyond). A session lasts 14 days from its last use, is
stored as a SHA-256 only, and ends at \`DELETE /session\`, when the user's password changes or the
user is deleted; \`GET /session\` gives a session over a day old a new id (and the cookie 14 more
days; the old id works one more minute), so an id is never sent twice. A server with no user logs a one-time
setup link at start (\`/setup?token=…\`, new at every start until used): its page, or
\`POST /setup\` \`{token, account, name, password}\`, creates the first account and its admin and
signs them in; a wrong or used token is 403, a server that has a user 409.

**The console.** \`GET /\` is the console, a web app for people (HTML; its files under
\`/console/assets/\`, content-hashed): it signs in with \`POST /session\` and then calls this API with
the session cookie, reading live positions from \`GET /devices/stream\`. Nothing comes from a CDN;
only map tiles come from TILE_URL.

**Models.** A model made with \`POST /models\` belongs to the admin's account (\`account\`): only
that account's devices may use it and only its admins change it; to another account it does not
exist (404). Server-wide models (\`account: null\`: a built-in one per protocol, kept up to date by
the server; imported ones; the operator's) are read by every user and changed only by the operator,
from the command line or an import: \`PATCH\`/\`DELETE\` is 403. A change to a model is in the
audit log of every account whose devices use it. A model's \`protocol\` is one the server speaks
(the enum in its schema) or null; another is 400. A device needs no model: added without one, its
\`model\` is null until its first report commits, which gives it the built-in model of the
protocol it reported on (kept after; only PATCH changes it); until then it offers no command and
sending one is 409.

**Commands.** A model's command with \`send: { text }\` can be sent:
\`POST /devices/{id}/commands/{commandId}\` with the form's values (\`{}\` or no body for a button)
answers 202 with the sent command once it is stored. Values: every field, no other, a string of at
most 128 characters without control characters, a \`number\` field a JSON number, a value its field's
\`pattern\` matches whole, and no separator of the device's protocol (${COMMAND_SEPARATORS}: a value cannot
smuggle another parameter or command) unless the pattern allows it
(400 naming the field); \`{field}\` in \`send.text\` takes the value (another \`{word}\` stays as written).
A field with \`required: true\` may not be empty (400); one with \`required: false\` may be left out or
empty and is then never sent: its \`{field}\` goes, with the one separator before it. 409 for a
command without \`send\` and for a model whose \`protocol\` is osmand (OsmAnd
devices cannot be called back); 403 for a share token; 404 for a command not of the device's model.
Per device in order, one at a time: the next once the previous is answered or has waited 60 s; a
command still queued after \`COMMAND_TTL\` seconds (default 86,400) is \`expired\`, one sent and
unanswered by then \`failed\`; a reconnection while one waits for its answer sends it again once, a
second one fails it. \`user\` is the sender's user id. A \`password\` field's value (wherever it
appears, the device's answer included) shows as \`***\` in every answer, event and log; the real text
is kept only until the command is answered, failed, expired or cancelled. Events
\`command_answered\`, \`command_failed\`, \`command_expired\` have \`context\` \`{ id, command, name }\`
(the sent command, the model's command, its name) and no position, at the second of the change (two
in one second are two events at it). On the wire: GT06 an online
command (0x80) whose server flag names the command, answered by 0x15 or 0x21 echoing it (printable
ASCII, at most 243 characters); Teltonika a Codec 12 command, answered by a Codec 12 response (printable
ASCII, at most 160); H02 \`*<maker>,<id>,<command>,<hhmmss>[,…]#\` from a \`send.text\` of
\`<command>[,<parameter>…]\`, answered by V4. An answer that names no command completes the oldest one
waiting; a text the protocol cannot carry is \`failed\` when it would go out, and the next goes.
JT808: the platform message a \`send.text\` of \`8201\`, \`8105:<word>[;<parameters>]\`, \`8103:<id hex>=<number>\` or \`8300:<text>\` names (docs/protocols.md), answered by 0x0001 naming its serial (0x0201 for 8201).

**Database timeouts.** While another process holds the database's write lock (an import), reads
answer as usual and a write (a share-link change) waits for it; still waiting after 5 s, it is
answered 504 and nothing is written.

**Operations.** \`GET /health\` (alive) and \`GET /ready\` (database, migrations and device
listeners up; 503 otherwise and while shutting down) need no authentication; \`GET /metrics\` is
Prometheus text, behind \`Authorization: Bearer <METRICS_TOKEN>\` when the server has one. Every
response carries \`X-Request-Id\`: yours when it is 8–128 characters of
\`A-Z a-z 0-9 . _ : @ / + = -\`, else a new UUID; quote it when reporting a problem.

**Devices reporting in.** Devices report on their own ports, not through this API:
${PROTOCOLS.map((p) => `${p.title} over ${p.transport.toUpperCase()} (\`${p.portVariable}\`, ${p.defaultPort})`).join(', ')},
found by IMEI or serial — the identifier is a device's only
credential: an unknown one is 404 on OsmAnd (the client keeps its report) for at most 20
distinct identifiers an address a minute (\`UNKNOWN_IDENTIFIERS_PER_MINUTE\`); past that an unknown
identifier is answered 200 as a known one is and its report dropped, so a known device is never
refused for what else comes from its address. Fixes more than a day ahead
or older than 365 days (\`MAX_FIX_AGE_DAYS\`) are refused. A fix repeating a stored
(device, second) is not a new point. Invalid fixes and 0/0 are kept but never become a location.
A device is \`moving\` when its newest fix is above 3 km/h, else \`stopped\`; it becomes \`off\` with
\`connected: false\` when its connection closes or after 600 s (\`OFFLINE_AFTER\`) without a report;
\`suspended\`, \`unlink\` and \`stolen\` never change by themselves. Event \`alarm_code\` values from
devices: ${[...DEVICE_ALARM_CODES].map((code) => `\`${code}\``).join(', ')}; an alarm a device sends
that is not on this list (an unnamed GT06 alarm byte, an OsmAnd client's own word) is stored as
\`alarm\` with the device's own code in \`context.raw_alarm\` (\`"0x1f"\`, \`"fuelTheft"\`), never as
a code of its own. The server adds \`device_online\`, \`device_offline\`, \`command_answered\`,
\`command_failed\` and \`command_expired\`. Their
\`context\` holds the protocol's details; a \`dbm\` estimated from a signal level has
\`context.dbm_estimated: true\`.
`.trim()
