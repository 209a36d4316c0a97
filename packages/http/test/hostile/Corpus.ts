/**
 * The hostile-input corpus's vocabulary: a case is a raw request and what the answer must be,
 * written as data; `verdict` judges an answer and says, case name first, what is wrong with it.
 *
 * Every answer, whatever the case expects, must also: not be a 5xx, not be a dropped connection,
 * and, when it is a 401, carry `WWW-Authenticate: Bearer`.
 */
import type { HeaderList, RawReply, RawRequest } from "./RawHttp.ts"

/** Who the request is sent as: an Authorization header added before the case's own headers. */
export type Auth = "customer" | "other" | "operator" | "none"

/** Which listener: the public one (API, chat, OAuth, MCP) or the admin RPC service's. */
export type Target = "public" | "admin"

export interface Expectation {
  readonly status: number | ReadonlyArray<number>
  /** The spec's error body `{ code, error }` with one of these codes. */
  readonly code?: string | ReadonlyArray<string>
  /** Any `{ code: string, error: string }` body (e.g. an unknown route, where the spec names no code). */
  readonly errorBody?: true
  /** An OAuth error (RFC 6749 §5.2, RFC 7591 §3.2.2): the JSON body's `error`, or the `error` of a redirect's query. */
  readonly oauthError?: string | ReadonlyArray<string>
  /** A JSON-RPC answer of /mcp that is an error: a JSON-RPC `error`, or a tool result with `isError: true`. */
  readonly mcpError?: true
  /** With mcpError: when the answer is a tool error result carrying a code, one of these. */
  readonly toolCode?: string | ReadonlyArray<string>
  /** An admin RPC refusal: a 4xx, or an RPC exit that failed with the procedure's error (not a defect). */
  readonly adminRefusal?: true
}

export interface HostileCase {
  readonly name: string
  readonly target?: Target
  readonly auth?: Auth
  readonly request: RawRequest
  readonly expect: Expectation
  /** Per-case timeout of the raw client, for requests that make a server wait. */
  readonly timeoutMs?: number
  /** Why the expected outcome is a judgement call (listed in the report). */
  readonly unsure?: string
}

/** The spec's codes of 5xx answers. */
const SERVER_CODES = [
  "API_UNAVAILABLE",
  "AUTH_UNAVAILABLE",
  "EXECUTION_TEMPORARILY_UNAVAILABLE",
  "EXECUTION_UNAVAILABLE",
  "PLATFORM_BUDGET_EXCEEDED",
  "UPSTREAM_ERROR"
]

const setOf = <A>(one: A | ReadonlyArray<A>): ReadonlyArray<A> => (Array.isArray(one) ? one : [one as A])

export const json = (value: unknown): string => JSON.stringify(value)

/** A JSON POST. */
export const postJson = (path: string, body: unknown, headers: HeaderList = []): RawRequest => ({
  method: "POST",
  path,
  headers: [["content-type", "application/json"], ...headers],
  body: typeof body === "string" ? body : JSON.stringify(body)
})

export const get = (path: string, headers: HeaderList = []): RawRequest => ({ method: "GET", path, headers })

const oauthErrorOf = (reply: RawReply): string | undefined => {
  if (typeof reply.json?.error === "string") return reply.json.error
  const location = reply.headers["location"]
  if (location !== undefined) {
    try {
      return new URL(location, "http://x").searchParams.get("error") ?? undefined
    } catch {
      return undefined
    }
  }
  // An HTML error page (RFC 6749 §4.1.2.1: no redirect to an unverified redirect_uri) naming the code.
  return reply.text.match(
    /\b(invalid_request|invalid_client|invalid_scope|unsupported_response_type|invalid_grant|access_denied|invalid_redirect_uri|invalid_client_metadata|invalid_target|unauthorized_client)\b/
  )?.[1]
}

/** The JSON-RPC message of an /mcp answer. */
const rpcMessage = (reply: RawReply): any => (Array.isArray(reply.json) ? reply.json[0] : reply.json)

/**
 * An admin RPC answer (effect/rpc over HTTP, JSON): the exit of the request, when there is one.
 * A refusal is a 4xx, or a failed exit whose cause holds the procedure's error (AdminError,
 * `Fail`, but not its StoreUnavailable, the 503 of the admin service) or effect/rpc's refusal of a payload its schema does not decode (a `Die` whose defect
 * is the decoder's message, a string). A thrown exception (a defect that is an Error object:
 * SyntaxError, TypeError, RangeError...) is not a refusal, nor is a success.
 */
const isMessage = (defect: unknown): boolean => typeof defect === "string"

const adminRefused = (reply: RawReply): boolean => {
  if (reply.status >= 400 && reply.status < 500) return true
  if (reply.status !== 200) return false
  const messages: Array<any> = Array.isArray(reply.json) ? reply.json : reply.json === undefined ? [] : [reply.json]
  if (messages.length === 0) return false
  return messages.every((message) => {
    if (message?._tag === "Exit") {
      const exit = message.exit
      if (exit?._tag !== "Failure") return false
      const failures: Array<any> = Array.isArray(exit.cause) ? exit.cause : [exit.cause]
      // AdminError "StoreUnavailable" is the service's 503: an outage, not a refusal of the payload.
      const refusal = (failure: any) =>
        (failure?._tag === "Fail" && failure.error?.reason !== "StoreUnavailable") ||
        (failure?._tag === "Die" && isMessage(failure.defect))
      return failures.length > 0 && failures.every(refusal)
    }
    // A protocol-level answer to an envelope that is not a request: its decoder's message, not an exception.
    return message?._tag === "Defect" && isMessage(message.defect)
  })
}

/** What is wrong with the answer to `c`, or undefined when it is as expected. */
export const verdict = (c: HostileCase, reply: RawReply): string | undefined => {
  const problems: Array<string> = []
  const e = c.expect
  if (reply.status === 0) problems.push(`no HTTP answer (${reply.transportError ?? "connection closed"})`)
  if (reply.status >= 500) problems.push(`a 5xx answer`)
  if (!setOf(e.status).includes(reply.status)) problems.push(`status ${reply.status}, expected ${setOf(e.status).join(" or ")}`)
  // The token and revocation endpoints authenticate the client: their 401 names the client's scheme (RFC 6749 §5.2).
  const clientAuth = /^\/(token|revoke)\b/.test(c.request.path)
  if (reply.status === 401 && !(clientAuth ? /\S/ : /^Bearer\b/i).test(reply.headers["www-authenticate"] ?? "")) {
    problems.push(
      `a 401 without WWW-Authenticate${clientAuth ? "" : ": Bearer"} (got ${JSON.stringify(reply.headers["www-authenticate"])})`
    )
  }
  if (e.code !== undefined || e.errorBody) {
    const body = reply.json
    if (typeof body?.code !== "string" || typeof body?.error !== "string") problems.push(`no { code, error } body`)
    else if (e.code !== undefined && !setOf(e.code).includes(body.code))
      problems.push(`code ${body.code}, expected ${setOf(e.code).join(" or ")}`)
  }
  if (e.oauthError !== undefined) {
    const error = oauthErrorOf(reply)
    if (error === undefined || !setOf(e.oauthError).includes(error)) {
      problems.push(`OAuth error ${JSON.stringify(error)}, expected ${setOf(e.oauthError).join(" or ")}`)
    }
  }
  if (e.mcpError) {
    const message = rpcMessage(reply)
    const isRpcError = typeof message?.error === "object" && message.error !== null
    const isToolError = message?.result?.isError === true
    const isHttpRefusal = reply.status >= 400 && reply.status < 500
    if (!isRpcError && !isToolError && !isHttpRefusal) problems.push(`neither a JSON-RPC error nor a tool error result`)
    const toolCode = message?.result?.structuredContent?.code
    // A tool's error result carries the API's codes: those of a 5xx are a 5xx, whatever the HTTP status.
    if (isToolError && SERVER_CODES.includes(toolCode)) problems.push(`a tool error of the 5xx class (${toolCode})`)
    if (isToolError && e.toolCode !== undefined && !setOf(e.toolCode).includes(toolCode)) {
      problems.push(`tool error code ${toolCode}, expected ${setOf(e.toolCode).join(" or ")}`)
    }
  }
  if (e.adminRefusal && !adminRefused(reply))
    problems.push(`not an admin refusal (a 4xx or a failed exit with the procedure's error)`)
  if (problems.length === 0) return undefined
  const shown = reply.text.length > 1500 ? `${reply.text.slice(0, 1500)}… (${reply.text.length} chars)` : reply.text
  return `[${c.name}] ${problems.join("; ")}\n  answer: ${reply.status} ${JSON.stringify(shown)}`
}

/** Hostile string values: NUL and the two lone surrogate halves, each inside otherwise ordinary text. */
export const BAD_STRINGS = [
  { label: "NUL", wrap: (text: string) => `${text}\u0000` },
  { label: "lone high surrogate", wrap: (text: string) => `${text}\ud800` },
  { label: "lone low surrogate", wrap: (text: string) => `\udc00${text}` }
] as const

/** Raw JSON with a number the JS parser cannot keep (1e400 is Infinity) or keeps inexactly. */
export const HUGE_NUMBERS: ReadonlyArray<{ readonly label: string; readonly raw: string }> = [
  { label: "1e400", raw: "1e400" },
  { label: "-1e400", raw: "-1e400" },
  { label: "-0", raw: "-0" },
  { label: "2^64", raw: "18446744073709551616" },
  { label: "2^53+1", raw: "9007199254740993" },
  { label: '"NaN"', raw: '"NaN"' },
  { label: "1.5", raw: "1.5" },
  { label: "1e-400", raw: "1e-400" }
]

/** `depth` levels of arrays around `inner`. */
export const nestedArrays = (depth: number, inner = "1"): string => "[".repeat(depth) + inner + "]".repeat(depth)
/** `depth` levels of `{"a": ...}` around `inner`. */
export const nestedObjects = (depth: number, inner = "1"): string => '{"a":'.repeat(depth) + inner + "}".repeat(depth)

/** Path segments meant to escape or confuse a route's parameter. */
export interface PathTrick {
  readonly label: string
  readonly segment: string
  /**
   * "route": the router may not match it at all (a dot segment, an overlong segment): any 404
   * with { code, error } (an unknown route) will do. "undecodable": the segment is not valid
   * percent-encoded UTF-8, a malformed URL on any route: 400 INVALID_REQUEST (not the 404 of an id).
   */
  readonly kind?: "route" | "undecodable"
}

export const PATH_TRICKS: ReadonlyArray<PathTrick> = [
  { label: "../", segment: "../usage", kind: "route" },
  { label: "%2e%2e", segment: "%2e%2e" },
  { label: "%2e%2e%2f", segment: "%2e%2e%2fusage" },
  { label: "..%2f..%2f", segment: "..%2f..%2fprices" },
  { label: "%00", segment: "%00" },
  { label: "x%00y", segment: "x%00y" },
  { label: "encoded lone surrogate (invalid UTF-8)", segment: "%ED%A0%80", kind: "undecodable" },
  { label: "malformed percent-encoding", segment: "%E0%A4%A", kind: "undecodable" },
  { label: "bare %", segment: "%", kind: "undecodable" },
  { label: "unicode id", segment: "%E2%98%83" },
  { label: "overlong id (4000 chars)", segment: "a".repeat(4000), kind: "route" },
  { label: "__proto__", segment: "__proto__" },
  { label: "constructor", segment: "constructor" },
  { label: "uuid-like with NUL", segment: "00000000-0000-0000-0000-000000000000%00" },
  { label: "random uuid", segment: "3f2504e0-4f89-41d3-9a0c-0305e82c3301" }
]

/** What a request for `trick` as a resource id must get, where a well-formed unknown id gets `notFound`. */
export const pathTrickExpectation = (trick: PathTrick, notFound: string): Expectation =>
  trick.kind === "route"
    ? { status: 404, errorBody: true }
    : trick.kind === "undecodable"
      ? { status: 400, code: "INVALID_REQUEST" }
      : { status: 404, code: notFound }
