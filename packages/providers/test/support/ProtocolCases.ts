/**
 * The failure cases every HTTP adapter is tested for, against msw: the test gives the routes of
 * its protocol and bodies for "accepted" and "still running", and these cases drive the
 * upstream through 4xx, 5xx, 429, timeouts, malformed bodies, a job that never finishes and a
 * connection lost after the submission was sent.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { delay, http, HttpResponse } from "msw"
import type { SetupServer } from "msw/node"
import type { Catalog, Provider } from "@taskmeter/kernel"
import type { HttpClient } from "@taskmeter/providers"

export interface Route {
  readonly method: "get" | "post" | "put"
  readonly url: string
}

export interface ProtocolCase {
  readonly name: string
  /** The adapter under test, with the given HTTP options (short timeouts). */
  readonly makeAdapter: (http: HttpClient.Options) => Provider.ProviderV1
  readonly model: string
  readonly input: Catalog.ModelInput
  readonly submit: Route
  readonly poll: Route
  /** A body the upstream answers an accepted submission with. */
  readonly accepted: () => Response
  /** A body the upstream answers a poll of a running job with. */
  readonly running: () => Response
  /** How the protocol reports an error status: as the HTTP status (default) or in a 200 envelope. */
  readonly errorResponse?: ((status: number, message: string, headers?: Record<string, string>) => Response) | undefined
}

const SHORT = { requestTimeoutMs: 250, headersTimeoutMs: 200, connectTimeoutMs: 200 }

export const protocolCases = (server: SetupServer, spec: ProtocolCase): void => {
  describe(`${spec.name}: upstream failures`, () => {
    const adapter = spec.makeAdapter(SHORT)
    const on = (route: Route, respond: (request: Request) => Response | Promise<Response>) =>
      server.use(http[route.method](route.url, ({ request }) => respond(request)))
    const errorResponse =
      spec.errorResponse ??
      ((status: number, message: string, headers?: Record<string, string>) =>
        HttpResponse.json({ detail: message }, { status, ...(headers === undefined ? {} : { headers }) }))
    let n = 0
    const submit = () => adapter.submit({ model: spec.model, input: spec.input, reference: `task-${spec.name}-${++n}` })
    const poll = () => adapter.poll({ model: spec.model, upstreamId: "job-1", reference: "task-1" })
    const failure = <A>(effect: Effect.Effect<A, Provider.ProviderError>) => Effect.flip(effect)

    it.live("a 4xx on submit is Terminal, with the upstream's message", () =>
      Effect.gen(function* () {
        on(spec.submit, () => errorResponse(422, "prompt is too long"))
        const error = yield* failure(submit())
        expect(error.reason).toBe("Terminal")
        expect(error.errorCode).toBe("UPSTREAM_REJECTED_INPUT")
        expect(error.message).toContain("prompt is too long")
      })
    )

    it.live("a 401 or 402 on submit is Terminal with its own errorCode", () =>
      Effect.gen(function* () {
        on(spec.submit, () => errorResponse(401, "invalid key"))
        expect((yield* failure(submit())).errorCode).toBe("UPSTREAM_AUTH_FAILED")
        server.resetHandlers()
        on(spec.submit, () => errorResponse(402, "insufficient credits"))
        expect((yield* failure(submit())).errorCode).toBe("UPSTREAM_PAYMENT_REQUIRED")
      })
    )

    it.live("a 404 on poll is Terminal (the job is gone)", () =>
      Effect.gen(function* () {
        on(spec.poll, () => errorResponse(404, "not found"))
        const error = yield* failure(poll())
        expect(error.reason).toBe("Terminal")
        expect(error.errorCode).toBe("UPSTREAM_NOT_FOUND")
      })
    )

    it.live("a 5xx is Retryable on submit and on poll", () =>
      Effect.gen(function* () {
        on(spec.submit, () => errorResponse(500, "internal error"))
        on(spec.poll, () => errorResponse(503, "overloaded"))
        expect((yield* failure(submit())).reason).toBe("Retryable")
        expect((yield* failure(poll())).reason).toBe("Retryable")
      })
    )

    it.live("a 429 is RateLimited with Retry-After in seconds or as a date", () =>
      Effect.gen(function* () {
        on(spec.submit, () => HttpResponse.json({ detail: "slow down" }, { status: 429, headers: { "retry-after": "3" } }))
        const inSeconds = yield* failure(submit())
        expect(inSeconds.reason).toBe("RateLimited")
        expect(inSeconds.retryAfterMs).toBe(3000)
        const at = new Date(Date.now() + 60_000).toUTCString()
        on(spec.poll, () => HttpResponse.json({ detail: "slow down" }, { status: 429, headers: { "retry-after": at } }))
        const asDate = yield* failure(poll())
        expect(asDate.reason).toBe("RateLimited")
        expect(asDate.retryAfterMs).toBeGreaterThan(55_000)
        expect(asDate.retryAfterMs).toBeLessThanOrEqual(60_000)
      })
    )

    it.live("a submit that times out waiting for the answer is OutcomeUnknown; a poll, Retryable", () =>
      Effect.gen(function* () {
        on(spec.submit, async () => {
          await delay(2_000)
          return spec.accepted()
        })
        on(spec.poll, async () => {
          await delay(2_000)
          return spec.running()
        })
        const submitted = yield* failure(submit())
        expect(submitted.reason).toBe("OutcomeUnknown")
        expect(submitted.message).toMatch(/timed out|Timeout/i)
        expect((yield* failure(poll())).reason).toBe("Retryable")
      })
    )

    it.live("a connection lost after the submission was sent is OutcomeUnknown", () =>
      Effect.gen(function* () {
        const received: Array<unknown> = []
        on(spec.submit, async (request) => {
          received.push(await request.json())
          return HttpResponse.error()
        })
        expect((yield* failure(submit())).reason).toBe("OutcomeUnknown")
        expect(received).toHaveLength(1)
      })
    )

    it.live("a malformed success body is OutcomeUnknown on submit and Retryable on poll", () =>
      Effect.gen(function* () {
        on(spec.submit, () => new HttpResponse("<html>gateway</html>", { status: 200, headers: { "content-type": "text/html" } }))
        expect((yield* failure(submit())).reason).toBe("OutcomeUnknown")
        server.resetHandlers()
        on(spec.submit, () => HttpResponse.json({ code: 200, unexpected: true, data: { nothing: 1 } }))
        expect((yield* failure(submit())).reason).toBe("OutcomeUnknown")
        on(spec.poll, () => HttpResponse.json({ code: 200, data: { state: "exploded" }, status: "exploded" }))
        expect((yield* failure(poll())).reason).toBe("Retryable")
      })
    )

    it.live("a job that never finishes stays Pending", () =>
      Effect.gen(function* () {
        on(spec.poll, () => spec.running())
        for (let i = 0; i < 20; i++) expect((yield* poll())._tag).toBe("Pending")
      })
    )
  })
}
