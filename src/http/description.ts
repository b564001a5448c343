/**
 * The API's own description in the OpenAPI document: every decision the interface spec leaves
 * open, stated where an API user looks first. Keep it in step with README.md.
 */
export const API_DESCRIPTION = `
Self-hosted GPS fleet tracking. Every error is RFC 9457 problem details
(\`application/problem+json\`: \`type\`, \`title\`, \`status\`, \`detail\`, and \`errors[]\` with
\`path\` and \`message\` on validation failures). Invalid parameters are **400**, never 422; a
malformed UUID in a path is 400.

**Authentication.** \`Authorization: Bearer <key>\` on every endpoint under /devices: an API key
(\`cli key create --user ID\`) or a share token. Missing, malformed or unknown → 401 with
\`WWW-Authenticate: Bearer realm="tracker"\` (plus \`error="invalid_token"\` when a token was sent).
Repeated unknown tokens from one client are slowed down (from the 6th failure, 10 ms more each,
at most 200 ms) and after 20 failures within 60 s refused with 429 and \`Retry-After\`; a successful
authentication clears the count. A device you cannot reach is 404, never 403.
\`X-ACT\` / \`X-Dev\` request headers are ignored: the shared-link context is derived from the token.

**Conventions.** Distances in metres, durations in seconds, speeds in km/h. Coordinates are WGS84
\`[latitude, longitude]\`. Datetimes are ISO 8601 UTC with milliseconds and \`Z\`; \`from\`, \`to\`,
\`timestamp\`, \`start\` and \`end\` are integer Unix seconds. \`location\`, \`connected_at\` and
\`disconnected_at\` are null when never set. Unknown query parameters are ignored; unknown body
fields are rejected (400).

**GET /devices.** \`groups\` (repeat it or separate with commas), \`limit\` 1–1000 (default 99),
\`offset\` ≥ 0 (default 0). Stable order: alias, then id. Devices in state \`unlink\` are never
listed (they can still be read by id). An empty page is 404, as the spec says.

**Database timeouts.** A query that waits for the database longer than its busy timeout (5 s) is
answered 504.
`.trim()
