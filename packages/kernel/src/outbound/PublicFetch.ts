/**
 * A GET (or a POST) of a URL someone else chose (an upstream's result link, an OAuth client's document, a webhook)
 * under the `AddressPolicy`: URL checked, host resolved and every address checked, connection
 * pinned to those addresses (its own connector answers the lookup; DNS rebinding cannot swap one
 * in), no redirect followed (a 3xx is `Refused`). Reading and capping the body is the caller's.
 */
import { Data, Effect } from "effect"
import type { Scope } from "effect"
import type { LookupAddress } from "node:dns"
import { isIP } from "node:net"
import type { LookupFunction } from "node:net"
import { Agent, buildConnector } from "undici"
import { AddressPolicy, AddressRefused, bareHost, permits, resolveChecked, urlProblem } from "./AddressPolicy.ts"
import type { Policy } from "./AddressPolicy.ts"

/** The policy refuses the URL, an address of its host, or the answer (a redirect). Permanent. */
export class Refused extends Data.TaggedError("Refused")<{ readonly message: string }> {}

/** The fetch failed on the way (resolution, connection, TLS, timeout); may work later. */
export class Failed extends Data.TaggedError("Failed")<{ readonly message: string; readonly cause?: unknown }> {}

export interface Options {
  /** Time to open the connection (TCP and TLS). Default 10 s. */
  readonly connectTimeoutMs?: number | undefined
  /** The only ports allowed (the URL's, or its scheme's default); any when absent. */
  readonly ports?: ReadonlyArray<number> | undefined
  readonly headers?: { readonly [name: string]: string } | undefined
  /** GET unless given; a POST sends `body`. */
  readonly method?: "GET" | "POST" | undefined
  readonly body?: string | undefined
  /**
   * Tests: the transport in place of the global `fetch`. The URL and address checks still run
   * before it; the pinned connection is the global fetch's (through its `dispatcher`).
   */
  readonly fetch?: typeof globalThis.fetch | undefined
}

/** The URL as shown in messages: origin and path, never a query that may hold a signature. */
const shown = (url: string): string =>
  URL.canParse(url) ? (({ origin, pathname }) => `${origin}${pathname}`)(new URL(url)) : url.slice(0, 100)

const portOf = (url: URL): number => (url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80)

/** Whether `error` or one of its causes is a refusal of the policy (thrown from the connector). */
const refusalIn = (error: unknown): AddressRefused | undefined => {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    if (cause instanceof AddressRefused) return cause
  }
  return undefined
}

/** A failed fetch's reason: its cause's (fetch itself only says "fetch failed"). */
const reasonOf = (error: unknown): string =>
  error instanceof Error && error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : String(error)

/**
 * A dispatcher that connects to `host` at the vetted `addresses` only: its lookup answers with
 * them and with nothing for any other name, and an IP literal (which skips the lookup) must be
 * permitted itself. One per request, closed with it, so no pooled connection outlives its check.
 */
const pinnedAgent = (host: string, addresses: ReadonlyArray<LookupAddress>, policy: Policy, connectTimeoutMs: number) => {
  const lookup: LookupFunction = (hostname, options, callback) => {
    const family = options.family === 4 || options.family === 6 ? options.family : undefined
    const answer = bareHost(hostname) === host ? addresses.filter((a) => family === undefined || a.family === family) : []
    if (answer.length === 0) return callback(new AddressRefused(`${hostname} is not the vetted host`), "", 0)
    if (options.all === true) return callback(null, [...answer])
    return callback(null, answer[0]!.address, answer[0]!.family)
  }
  const connector = buildConnector({ timeout: connectTimeoutMs, lookup })
  return new Agent({
    connections: 1,
    connect: (options, callback) => {
      const target = bareHost(options.hostname)
      if (isIP(target) !== 0 && !permits(policy, target))
        return callback(new AddressRefused(`${target} is not a public address`), null)
      return connector(options, callback)
    }
  })
}

/**
 * Fetches `url` under the policy in force. The response is open until the scope closes (which
 * aborts it); any status but a 3xx comes back for the caller to judge.
 */
export const get = (url: string, options: Options = {}): Effect.Effect<Response, Refused | Failed, Scope.Scope> =>
  Effect.gen(function* () {
    const policy = yield* AddressPolicy
    const problem = urlProblem(url, policy)
    if (problem !== undefined) return yield* new Refused({ message: `${shown(url)} ${problem}` })
    const parsed = new URL(url)
    if (options.ports !== undefined && !options.ports.includes(portOf(parsed))) {
      return yield* new Refused({ message: `${shown(url)} is not on port ${options.ports.join(" or ")}` })
    }
    const addresses = yield* Effect.tryPromise({
      try: () => resolveChecked(parsed.hostname, policy),
      catch: (error) =>
        error instanceof AddressRefused
          ? new Refused({ message: `${shown(url)}: ${error.message}` })
          : new Failed({ message: `${shown(url)}: the host name did not resolve`, cause: error })
    })
    const agent = yield* Effect.acquireRelease(
      Effect.sync(() => pinnedAgent(bareHost(parsed.hostname), addresses, policy, options.connectTimeoutMs ?? 10_000)),
      (agent) => Effect.promise(() => agent.destroy().catch(() => undefined))
    )
    // Aborting on scope close also stops a body the caller is still reading.
    const controller = yield* Effect.acquireRelease(
      Effect.sync(() => new AbortController()),
      (controller) => Effect.sync(() => controller.abort())
    )
    const transport = options.fetch ?? globalThis.fetch
    const response = yield* Effect.tryPromise({
      try: () =>
        transport(url, {
          redirect: "manual",
          signal: controller.signal,
          ...(options.method === undefined ? {} : { method: options.method }),
          ...(options.body === undefined ? {} : { body: options.body }),
          ...(options.headers === undefined ? {} : { headers: options.headers }),
          // undici's Agent runs Node's fetch, but its typings are another release than @types/node's undici-types.
          dispatcher: agent as unknown as NonNullable<RequestInit["dispatcher"]>
        }),
      catch: (error) => {
        const refusal = refusalIn(error)
        return refusal !== undefined
          ? new Refused({ message: `${shown(url)}: ${refusal.message}` })
          : new Failed({ message: `${shown(url)}: the request failed (${reasonOf(error)})`, cause: error })
      }
    })
    if ((response.status >= 300 && response.status < 400) || response.type === "opaqueredirect") {
      yield* Effect.promise(() => response.body?.cancel().catch(() => undefined) ?? Promise.resolve())
      return yield* new Refused({ message: `${shown(url)} answered a redirect (HTTP ${response.status}), which is not followed` })
    }
    return response
  })

/** `get` as a POST of `body` (a webhook delivery). */
export const post = (
  url: string,
  body: string,
  options: Omit<Options, "method" | "body"> = {}
): Effect.Effect<Response, Refused | Failed, Scope.Scope> => get(url, { ...options, method: "POST", body })
