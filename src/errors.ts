/**
 * Domain errors: what services throw. They know nothing of HTTP beyond a status number;
 * `http/problem.ts` is the one place that turns them into RFC 9457 responses.
 */

export interface FieldError {
  /** JSON pointer into the request part at fault: `/ttl`, `/devices/2` */
  path: string
  message: string
}

export class DomainError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
    readonly errors?: FieldError[],
  ) {
    super(detail)
  }
}

export class Invalid extends DomainError {
  constructor(detail: string, errors?: FieldError[]) {
    super(400, 'Bad Request', detail, {}, errors)
  }
  static field(path: string, message: string): Invalid {
    return new Invalid(`${path}: ${message}`, [{ path, message }])
  }
}

export class Unauthorized extends DomainError {
  /** `tokenSent` adds error="invalid_token", as RFC 6750 asks when a token was presented. */
  constructor(detail: string, tokenSent: boolean) {
    super(401, 'Unauthorized', detail, {
      'WWW-Authenticate': tokenSent ? 'Bearer realm="tracker", error="invalid_token"' : 'Bearer realm="tracker"',
    })
  }
}

export class Forbidden extends DomainError {
  constructor(detail: string) {
    super(403, 'Forbidden', detail)
  }
}

export class NotFound extends DomainError {
  constructor(detail: string) {
    super(404, 'Not Found', detail)
  }
}

/** The request is well formed but clashes with what exists (a duplicate, the last admin, setup already done). */
export class Conflict extends DomainError {
  /** `errors`: the fields at fault, when the clash is one field's (a taken identifier) */
  constructor(detail: string, errors?: FieldError[]) {
    super(409, 'Conflict', detail, {}, errors)
  }
}

export class PayloadTooLarge extends DomainError {
  constructor(detail: string) {
    super(413, 'Content Too Large', detail)
  }
}

export class HeadersTooLarge extends DomainError {
  constructor(detail: string) {
    super(431, 'Request Header Fields Too Large', detail)
  }
}

export class TooManyRequests extends DomainError {
  constructor(detail: string, retryAfterSeconds: number) {
    super(429, 'Too Many Requests', detail, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) })
  }
}

export class Timeout extends DomainError {
  constructor(detail: string) {
    super(504, 'Gateway Timeout', detail)
  }
}

export class Unavailable extends DomainError {
  constructor(detail: string, retryAfterSeconds?: number) {
    super(503, 'Service Unavailable', detail, retryAfterSeconds ? { 'Retry-After': String(Math.ceil(retryAfterSeconds)) } : {})
  }
}
