/**
 * The request id: a client's `X-Request-Id` when it is 1 to 128 characters of letters, digits and
 * `-_.:`, else a fresh UUID. Echoed in the response, and put in the request's log lines and span.
 */
import { randomUUID } from "node:crypto"

export const HEADER = "x-request-id"

const SAFE = /^[A-Za-z0-9._:-]{1,128}$/

/** The id a request goes by: the client's, if safe to log and echo, else a new one. */
export const of = (presented: string | undefined): string =>
  presented !== undefined && SAFE.test(presented) ? presented : randomUUID()
