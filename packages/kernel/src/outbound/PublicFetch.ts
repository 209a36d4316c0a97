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
import { Agent, buildConnector, request } from "undici"
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
  /**
   * Connections kept per host (`makePool`), for a caller posting to the same hosts often (webhook
   * deliveries); without one, every request resolves and connects anew.
   */
  readonly pool?: Pool | undefined
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
 * permitted itself. One per request, closed with it, unless a `Pool` keeps it for its host: then
 * its connections outlive the check by at most the pool's time to live.
 */
const pinnedAgent = (
  host: string,
  addresses: ReadonlyArray<LookupAddress>,
  policy: Policy,
  connectTimeoutMs: number,
  connections: number
) => {
  const lookup: LookupFunction = (hostname, options, callback) => {
    const family = options.family === 4 || options.family === 6 ? options.family : undefined
    const answer = bareHost(hostname) === host ? addresses.filter((a) => family === undefined || a.family === family) : []
    if (answer.length === 0) return callback(new AddressRefused(`${hostname} is not the vetted host`), "", 0)
    if (options.all === true) return callback(null, [...answer])
    return callback(null, answer[0]!.address, answer[0]!.family)
  }
  const connector = buildConnector({ timeout: connectTimeoutMs, lookup })
  return new Agent({
    connections,
    connect: (options, callback) => {
      const target = bareHost(options.hostname)
      if (isIP(target) !== 0 && !permits(policy, target))
        return callback(new AddressRefused(`${target} is not a public address`), null)
      return connector(options, callback)
    }
  })
}

/**
 * Pinned agents kept per host (see `pinnedAgent`) for `ttlMs` after the resolution that vetted
 * their addresses, so repeated requests to a host reuse connections; a host resolving elsewhere
 * is followed within `ttlMs`. Agents are closed when replaced and when the scope closes.
 */
export interface Pool {
  /** The host's agent, if one was vetted under this policy less than the time to live ago. */
  readonly fresh: (host: string, policy: Policy) => Agent | undefined
  /** Keeps (or replaces) the host's agent for these vetted addresses; answers the agent to use. */
  readonly keep: (host: string, policy: Policy, addresses: ReadonlyArray<LookupAddress>, connectTimeoutMs: number) => Agent
}

export const makePool = (options: { readonly ttlMs?: number; readonly connectionsPerHost?: number } = {}) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const ttlMs = options.ttlMs ?? 60_000
      const agents = new Map<string, { readonly agent: Agent; readonly policy: Policy; readonly expiresAt: number }>()
      const pool: Pool = {
        fresh: (host, policy) => {
          const entry = agents.get(host)
          return entry !== undefined && entry.policy === policy && entry.expiresAt > Date.now() ? entry.agent : undefined
        },
        keep: (host, policy, addresses, connectTimeoutMs) => {
          const current = pool.fresh(host, policy)
          if (current !== undefined) return current
          agents
            .get(host)
            ?.agent.close()
            .catch(() => undefined)
          const agent = pinnedAgent(host, addresses, policy, connectTimeoutMs, options.connectionsPerHost ?? 32)
          agents.set(host, { agent, policy, expiresAt: Date.now() + ttlMs })
          return agent
        }
      }
      return { pool, agents }
    }),
    ({ agents }) =>
      Effect.promise(() => Promise.all([...agents.values()].map(({ agent }) => agent.destroy().catch(() => undefined))))
  ).pipe(Effect.map(({ pool }) => pool))

/** The URL checked and its host resolved and vetted under the policy: the agent that connects only there. */
const vetted = (url: string, options: Options) =>
  Effect.gen(function* () {
    const policy = yield* AddressPolicy
    const problem = urlProblem(url, policy)
    if (problem !== undefined) return yield* new Refused({ message: `${shown(url)} ${problem}` })
    const parsed = new URL(url)
    if (options.ports !== undefined && !options.ports.includes(portOf(parsed))) {
      return yield* new Refused({ message: `${shown(url)} is not on port ${options.ports.join(" or ")}` })
    }
    const host = bareHost(parsed.hostname)
    const pooled = options.pool?.fresh(host, policy)
    if (pooled !== undefined) return pooled
    const addresses = yield* Effect.tryPromise({
      try: () => resolveChecked(parsed.hostname, policy),
      catch: (error) =>
        error instanceof AddressRefused
          ? new Refused({ message: `${shown(url)}: ${error.message}` })
          : new Failed({ message: `${shown(url)}: the host name did not resolve`, cause: error })
    })
    const connectTimeoutMs = options.connectTimeoutMs ?? 10_000
    if (options.pool !== undefined) return options.pool.keep(host, policy, addresses, connectTimeoutMs)
    return yield* Effect.acquireRelease(
      Effect.sync(() => pinnedAgent(host, addresses, policy, connectTimeoutMs, 1)),
      (agent) => Effect.promise(() => agent.destroy().catch(() => undefined))
    )
  })

/** A failed request's error: the policy's refusal if the connector refused, else a failure. */
const requestError = (url: string) => (error: unknown) => {
  const refusal = refusalIn(error)
  return refusal !== undefined
    ? new Refused({ message: `${shown(url)}: ${refusal.message}` })
    : new Failed({ message: `${shown(url)}: the request failed (${reasonOf(error)})`, cause: error })
}

const redirectRefused = (url: string, status: number) =>
  new Refused({ message: `${shown(url)} answered a redirect (HTTP ${status}), which is not followed` })

/** What a POST was answered: its status and the start of its body. */
export interface Answer {
  readonly status: number
  /** At most `maxAnswerBytes` of the body, as text. */
  readonly text: string
}

/**
 * POSTs `body` to `url` under the policy in force (a webhook delivery), on undici's `request`
 * (several times the rate of `fetch` per process): the answer's status and at most
 * `maxAnswerBytes` (default 1024) of its body; the rest is not read. A 3xx is `Refused`.
 */
export const post = (
  url: string,
  body: string,
  options: Omit<Options, "fetch"> & { readonly maxAnswerBytes?: number | undefined } = {}
): Effect.Effect<Answer, Refused | Failed> =>
  Effect.scoped(
    Effect.gen(function* () {
      const agent = yield* vetted(url, options)
      const controller = yield* Effect.acquireRelease(
        Effect.sync(() => new AbortController()),
        (controller) => Effect.sync(() => controller.abort())
      )
      return yield* Effect.tryPromise({
        try: async (): Promise<Answer> => {
          const response = await request(url, {
            method: "POST",
            body,
            signal: controller.signal,
            dispatcher: agent,
            ...(options.headers === undefined ? {} : { headers: options.headers })
          })
          const limit = options.maxAnswerBytes ?? 1024
          const chunks: Array<Buffer> = []
          let size = 0
          for await (const chunk of response.body as AsyncIterable<Buffer>) {
            chunks.push(chunk)
            size += chunk.length
            if (size >= limit) break
          }
          response.body.destroy()
          return { status: response.statusCode, text: Buffer.concat(chunks).subarray(0, limit).toString("utf8") }
        },
        catch: requestError(url)
      }).pipe(
        Effect.filterOrFail(
          (answer) => answer.status < 300 || answer.status >= 400,
          (answer) => redirectRefused(url, answer.status)
        )
      )
    })
  )

/**
 * Fetches `url` under the policy in force. The response is open until the scope closes (which
 * aborts it); any status but a 3xx comes back for the caller to judge.
 */
export const get = (url: string, options: Options = {}): Effect.Effect<Response, Refused | Failed, Scope.Scope> =>
  Effect.gen(function* () {
    const agent = yield* vetted(url, options)
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
          ...(options.headers === undefined ? {} : { headers: options.headers }),
          // undici's Agent runs Node's fetch, but its typings are another release than @types/node's undici-types.
          dispatcher: agent as unknown as NonNullable<RequestInit["dispatcher"]>
        }),
      catch: requestError(url)
    })
    if ((response.status >= 300 && response.status < 400) || response.type === "opaqueredirect") {
      yield* Effect.promise(() => response.body?.cancel().catch(() => undefined) ?? Promise.resolve())
      return yield* redirectRefused(url, response.status)
    }
    return response
  })
