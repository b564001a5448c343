/**
 * Calls to the server's API, relative to the page (APP_URL may carry a path prefix). The session
 * cookie goes with every call (same origin). A 401 on any call but sign-in means the session has
 * ended: the app goes back to the sign-in page.
 */
export interface Problem {
  title?: string
  detail?: string
  status?: number
  /** the fields at fault: a JSON pointer into the body (`/imei`) and what is wrong with it */
  errors?: { path: string; message: string }[]
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem | null,
    readonly retryAfterSeconds: number | null,
  ) {
    super(problem?.detail ?? `HTTP ${status}`)
  }
}

let onUnauthorized: () => void = () => {}
/** who to tell when a call finds the session gone */
export function whenUnauthorized(callback: () => void) {
  onUnauthorized = callback
}

export async function request(path: string, init: { method?: string; body?: unknown; signal?: AbortSignal; quiet401?: boolean } = {}): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (init.body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(path, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    credentials: 'same-origin',
    cache: 'no-store',
    signal: init.signal,
  })
  if (response.status === 401 && !init.quiet401) onUnauthorized()
  return response
}

export async function failure(response: Response): Promise<ApiError> {
  let problem: Problem | null = null
  try {
    problem = (await response.json()) as Problem
  } catch {
    // not JSON: the status says enough
  }
  const retryAfter = Number(response.headers.get('retry-after'))
  return new ApiError(response.status, problem, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null)
}

/** GET a JSON body; a non-2xx answer throws ApiError */
export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const response = await request(path, { signal })
  if (!response.ok) throw await failure(response)
  return (await response.json()) as T
}
