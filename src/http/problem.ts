/**
 * RFC 9457 problem details: the one place where every failure becomes a response.
 * Domain errors keep their status; validation and parse failures are 400 (never Elysia's 422);
 * a database busy past its timeout is 504; anything else is a 500 that says nothing of why.
 */
import { Elysia, type ValidationError } from 'elysia'
import { DomainError, type FieldError } from '../errors'
import type { Logger } from '../log'
import { isDatabaseBusy } from '../store/busy'
import { redactUrl } from '../ops/requests'

export const PROBLEM_CONTENT_TYPE = 'application/problem+json'

export interface Problem {
  type: string
  title: string
  status: number
  detail: string
  errors?: FieldError[]
}

export function problemResponse(problem: Omit<Problem, 'type'> & { type?: string }, headers: Record<string, string> = {}): Response {
  const body: Problem = { type: problem.type ?? 'about:blank', ...problem }
  return new Response(JSON.stringify(body), {
    status: problem.status,
    headers: { 'content-type': PROBLEM_CONTENT_TYPE, ...headers },
  })
}

export function domainProblem(error: DomainError): Response {
  return problemResponse(
    { title: error.title, status: error.status, detail: error.detail, ...(error.errors ? { errors: error.errors } : {}) },
    error.headers,
  )
}

interface SchemaLike {
  type?: string
  anyOf?: SchemaLike[]
  minimum?: number
  maximum?: number
  format?: string
  minItems?: number
  maxItems?: number
  title?: string
  const?: unknown
}

/** "must be an integer from 60 to 31536000", read off the schema, for unions Elysia adds to coerce query strings. */
function describeSchema(schema: SchemaLike | undefined): string | null {
  if (!schema) return null
  // a choice of literals (a role): name them, where TypeBox would say "one of: 'string', 'string'"
  if (schema.anyOf?.length && schema.anyOf.every((s) => s.const !== undefined)) return `must be one of ${schema.anyOf.map((s) => JSON.stringify(s.const)).join(', ')}`
  const numeric = schema.anyOf?.find((s) => s.type === 'integer' || s.type === 'number') ?? (schema.type === 'integer' || schema.type === 'number' ? schema : null)
  if (!numeric) return null
  const kind = numeric.type === 'integer' ? 'an integer' : 'a number'
  const { minimum: min, maximum: max } = numeric
  if (min !== undefined && max !== undefined) return `must be ${kind} from ${min} to ${max}`
  if (min !== undefined) return `must be ${kind} ≥ ${min}`
  if (max !== undefined) return `must be ${kind} ≤ ${max}`
  return `must be ${kind}`
}

interface Issue {
  path?: string
  message?: string
  summary?: string
  schema?: SchemaLike
}

/**
 * Elysia checks a coerced query value on its own and loses its path (and an array of a query
 * parameter fails inside a decode step that knows only the array): query schemas carry their
 * parameter name as `title`, which puts the path back.
 */
function issuesOf(error: Readonly<ValidationError>): Issue[] {
  const raw = error as unknown as { all?: Issue[]; schema?: SchemaLike; error?: Issue }
  if (Array.isArray(raw.all)) return raw.all.map((i) => ({ ...i, path: i.path || (i.schema?.title ? `/${i.schema.title}` : '') }))
  if (raw.error) return [{ ...raw.error, path: `${raw.schema?.title ? `/${raw.schema.title}` : ''}${raw.error.path ?? ''}` }]
  return []
}

/** at most this many field errors in one answer, each path and message at most MAX_TEXT characters: a hostile body cannot grow the answer */
export const MAX_FIELD_ERRORS = 20
const MAX_TEXT = 200
const bounded = (text: string) => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 1)}…` : text)

export function validationErrors(error: Readonly<ValidationError>): FieldError[] {
  const seen = new Map<string, string>()
  for (const issue of issuesOf(error)) {
    const path = bounded(issue.path || '/')
    if (seen.has(path)) continue
    const message = describeSchema(issue.schema) ?? issue.summary ?? issue.message ?? 'is invalid'
    seen.set(path, bounded(message))
    if (seen.size === MAX_FIELD_ERRORS) break
  }
  if (seen.size === 0) seen.set('/', 'is invalid')
  return [...seen].map(([path, message]) => ({ path, message }))
}

interface ErrorContext {
  code: string | number
  error: unknown
  request: Request
  path: string
}

/** Applied once, on the root app, so that it covers every route and every plugin. */
export function problemDetails(log: Logger) {
  return new Elysia({ name: 'problem-details' }).onError({ as: 'global' }, (context) => {
    const response = problemFor(context, log)
    // the access log and the metrics read the final status here (ops/requests.ts)
    context.set.status = response.status
    return response
  })
}

function problemFor({ code, error, request, path }: ErrorContext, log: Logger): Response {
  if (error instanceof DomainError) return domainProblem(error)
  switch (code) {
    case 'VALIDATION': {
      const errors = validationErrors(error as ValidationError)
      const where = (error as ValidationError).type
      return problemResponse({
        title: 'Bad Request',
        status: 400,
        detail: `Invalid ${where === 'params' ? 'path parameter' : where === 'query' ? 'query parameter' : where === 'body' ? 'body' : 'request'}: ${errors.map((e) => `${e.path} ${e.message}`).join('; ')}`,
        errors,
      })
    }
    case 'PARSE': {
      // what the auth macro's parse hook throws (401, 413, a bad body) comes wrapped in Elysia's ParseError
      const cause = (error as Error).cause
      if (cause instanceof DomainError) return domainProblem(cause)
      return problemResponse({ title: 'Bad Request', status: 400, detail: 'The request body could not be parsed; send JSON with Content-Type: application/json' })
    }
    case 'NOT_FOUND':
      return problemResponse({ title: 'Not Found', status: 404, detail: `No resource at ${request.method} ${path}` })
    case 'INVALID_COOKIE_SIGNATURE':
    case 'INVALID_FILE_TYPE':
      return problemResponse({ title: 'Bad Request', status: 400, detail: 'The request is malformed' })
  }
  if (isDatabaseBusy(error)) {
    log.warn('database busy past its timeout', { path: redactUrl(request.url) })
    return problemResponse({ title: 'Gateway Timeout', status: 504, detail: 'The database was busy for too long; try again' })
  }
  log.error('unhandled error', { path: redactUrl(request.url), method: request.method, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error), stack: error instanceof Error ? error.stack : undefined })
  return problemResponse({ title: 'Internal Server Error', status: 500, detail: 'Something went wrong on our side; it has been logged' })
}
