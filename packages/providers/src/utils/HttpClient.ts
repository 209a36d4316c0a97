/**
 * HTTP for every adapter, written once: the global `fetch` (so msw and other interceptors see it)
 * with an undici `Agent` dispatcher (pooling; connect, headers and body timeouts) from the undici
 * line Node bundles (7.x on Node 24: another major's dispatcher rejects Node fetch's handlers), and
 * an overall deadline per call. Failures are classified `ProviderError`s (`UpstreamError`), never
 * thrown.
 */
import { Effect, type Scope } from "effect"
import type { Provider } from "@taskmeter/kernel"
import { Agent } from "undici"
import * as CappedBody from "./CappedBody.ts"
import * as UpstreamError from "./UpstreamError.ts"

export interface Options {
  /** Time to open a connection (TCP and TLS). Default 10 s. */
  readonly connectTimeoutMs?: number | undefined
  /** Time from sending the request to the response headers. Default 30 s. */
  readonly headersTimeoutMs?: number | undefined
  /** Longest silence while a response body streams in. Default 30 s. */
  readonly bodyTimeoutMs?: number | undefined
  /** Deadline of a whole JSON call, connection to last byte. Default 60 s. */
  readonly requestTimeoutMs?: number | undefined
  /** Pooled connections per upstream origin. Default 16. */
  readonly connections?: number | undefined
  /** Largest JSON body read; larger answers count as malformed. Default 8 MiB. */
  readonly maxJsonBytes?: number | undefined
}

export interface Request {
  readonly method: "GET" | "POST" | "PUT" | "DELETE"
  readonly url: string
  readonly headers?: { readonly [name: string]: string } | undefined
  /** Sent as `application/json`. */
  readonly json?: unknown
}

/** A response read whole: its status, headers and body text. */
export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

export interface HttpClient {
  readonly options: Settings
  /** One JSON call: any status comes back as a Reply; only transport failures fail. */
  readonly send: (step: UpstreamError.Step, request: Request) => Effect.Effect<Reply, Provider.ProviderError>
  /** Closes the pooled connections. */
  readonly close: Effect.Effect<void>
}

/** Options with every default filled in. */
export type Settings = { readonly [K in keyof Options]-?: Exclude<Options[K], undefined> }

const defaults: Settings = {
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 30_000,
  bodyTimeoutMs: 30_000,
  requestTimeoutMs: 60_000,
  connections: 16,
  maxJsonBytes: 8 * 1024 * 1024
}

const describe = (request: { readonly method: string; readonly url: string }) => `${request.method} ${request.url}`

export const make = (options: Options = {}): HttpClient => {
  const settings: Settings = {
    connectTimeoutMs: options.connectTimeoutMs ?? defaults.connectTimeoutMs,
    headersTimeoutMs: options.headersTimeoutMs ?? defaults.headersTimeoutMs,
    bodyTimeoutMs: options.bodyTimeoutMs ?? defaults.bodyTimeoutMs,
    requestTimeoutMs: options.requestTimeoutMs ?? defaults.requestTimeoutMs,
    connections: options.connections ?? defaults.connections,
    maxJsonBytes: options.maxJsonBytes ?? defaults.maxJsonBytes
  }
  const agent = new Agent({
    connect: { timeout: settings.connectTimeoutMs },
    headersTimeout: settings.headersTimeoutMs,
    bodyTimeout: settings.bodyTimeoutMs,
    connections: settings.connections
  })

  /** fetch under the caller's interruption and the call's deadline; a timeout reads as such in the error. */
  const fetchWithin = (step: UpstreamError.Step, url: string, init: RequestInit, what: string) =>
    Effect.tryPromise({
      try: (signal) =>
        fetch(url, {
          ...init,
          signal: AbortSignal.any([signal, AbortSignal.timeout(settings.requestTimeoutMs)]),
          // undici's Agent runs Node's fetch, but its typings are another release than @types/node's undici-types.
          dispatcher: agent as unknown as NonNullable<RequestInit["dispatcher"]>
        }),
      catch: (error) =>
        UpstreamError.fromTransport(
          step,
          error,
          error instanceof DOMException && error.name === "TimeoutError"
            ? `${what} timed out after ${settings.requestTimeoutMs} ms`
            : `${what} failed`
        )
    })

  const send = (step: UpstreamError.Step, request: Request) => {
    const what = describe(request)
    const headers: Record<string, string> = { accept: "application/json", ...request.headers }
    if (request.json !== undefined) headers["content-type"] = "application/json"
    const init: RequestInit = {
      method: request.method,
      headers,
      ...(request.json === undefined ? {} : { body: JSON.stringify(request.json) })
    }
    return Effect.flatMap(fetchWithin(step, request.url, init, what), (response) =>
      Effect.tryPromise({
        try: () => CappedBody.readText(response, settings.maxJsonBytes),
        catch: (error) => ({ error })
      }).pipe(
        Effect.map((text): Reply => ({ status: response.status, headers: response.headers, text })),
        Effect.catch(({ error }) => {
          // An error status is classified by itself; its body only explains it.
          if (!response.ok) return Effect.succeed<Reply>({ status: response.status, headers: response.headers, text: "" })
          return Effect.fail(
            error instanceof CappedBody.BodyTooLarge
              ? UpstreamError.malformed(step, `${what}: ${error.message}`)
              : UpstreamError.fromTransport(step, error, `${what}: reading the response failed`)
          )
        })
      )
    )
  }

  return {
    options: settings,
    send,
    close: Effect.promise(() => agent.close())
  }
}

/** `make`, closed when the scope closes (a layer's, when built in one). */
export const scoped = (options: Options = {}): Effect.Effect<HttpClient, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => make(options)),
    (client) => client.close
  )
