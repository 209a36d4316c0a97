/**
 * The conformance suite every provider adapter passes (`suite(name, make, { handlers })`): v1
 * interface and catalog models, each model from submit to a result of its category, refusal of
 * models it does not serve, `lookup` when implemented, and for HTTP adapters (run against msw with
 * the given success handlers, catch-alls in front for the error cases) the classification of
 * upstream failures. Adapters without HTTP have no such cases.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { RequestHandler } from "msw"
import { http, HttpResponse } from "msw"
import { setupServer } from "msw/node"
import { afterAll, afterEach, beforeAll } from "vitest"
import type { Catalog } from "@taskmeter/kernel"
import { Provider, Task } from "@taskmeter/kernel"
import * as ShippedCatalog from "../utils/ShippedCatalog.ts"
import { sampleInput } from "./SampleInputs.ts"

export interface Options {
  /** msw handlers emulating the upstream's success path; none for an adapter without HTTP. */
  readonly handlers?: ReadonlyArray<RequestHandler> | undefined
  /** Inputs to use instead of the generated samples, per model. */
  readonly inputs?: { readonly [model: string]: Catalog.ModelInput } | undefined
  /** Polls before a model counts as never finishing (default 100), and the pause between them (default 10 ms). */
  readonly maxPolls?: number | undefined
  readonly pollIntervalMs?: number | undefined
  /** The model definitions; the kernel's catalog by default. */
  readonly catalog?: ReadonlyArray<Catalog.ModelDefinition> | undefined
}

const REASONS: ReadonlyArray<Provider.ProviderErrorReason> = ["RateLimited", "Retryable", "Terminal", "OutcomeUnknown"]

let counter = 0
const reference = (label: string) => `conformance-${label}-${Date.now()}-${++counter}`

/** Submits and polls until the job is no longer Pending. */
export const runToEnd = (
  adapter: Provider.ProviderV1,
  request: Provider.SubmitRequest,
  options: { readonly maxPolls?: number | undefined; readonly pollIntervalMs?: number | undefined } = {}
): Effect.Effect<Provider.PollResult | { readonly _tag: "NeverFinished" }, Provider.ProviderError> =>
  Effect.gen(function* () {
    const submitted = yield* adapter.submit(request)
    if (submitted._tag === "Completed") return { _tag: "Succeeded" as const, outputs: submitted.outputs }
    for (let poll = 0; poll < (options.maxPolls ?? 100); poll++) {
      const result = yield* adapter.poll({ model: request.model, upstreamId: submitted.upstreamId, reference: request.reference })
      if (result._tag !== "Pending") return result
      if (result.progress !== undefined) {
        expect(result.progress).toBeGreaterThanOrEqual(0)
        expect(result.progress).toBeLessThanOrEqual(1)
      }
      yield* Effect.sleep(options.pollIntervalMs ?? 10)
    }
    return { _tag: "NeverFinished" as const }
  })

/** The checks every result of a model passes, whatever the adapter. */
export const expectOutputsOf = (
  model: Catalog.ModelDefinition,
  input: Catalog.ModelInput,
  outputs: ReadonlyArray<Provider.ProviderOutput>
): void => {
  expect(outputs.length).toBeGreaterThan(0)
  for (const output of outputs) {
    expect(output.type).toBe(model.category)
    expect(Task.mimeTypesOf[output.type]).toContain(output.contentType)
    const carriers = [output.url, output.bytes, output.text].filter((value) => value !== undefined)
    expect(carriers).toHaveLength(1)
    if (output.url !== undefined) expect(["https:", "http:"]).toContain(new URL(output.url).protocol)
    if (output.bytes !== undefined) expect(output.bytes.length).toBeGreaterThan(0)
    if (output.type === "text") expect(output.text?.trim().length).toBeGreaterThan(0)
  }
  switch (model.category) {
    case "audio":
      // The spec: single-song and custom-song models produce two alternative songs per task.
      expect(outputs).toHaveLength(2)
      break
    case "video":
    case "text":
      expect(outputs).toHaveLength(1)
      break
    case "image":
      expect(outputs.length).toBeLessThanOrEqual(Number(input["numImages"] ?? Infinity))
      break
  }
}

const expectProviderError = (error: unknown, reason?: Provider.ProviderErrorReason) => {
  expect(error).toBeInstanceOf(Provider.ProviderError)
  const providerError = error as Provider.ProviderError
  expect(REASONS).toContain(providerError.reason)
  if (reason !== undefined) expect(providerError.reason).toBe(reason)
  return providerError
}

export const suite = (name: string, makeAdapter: () => Provider.ProviderV1, options: Options = {}): void => {
  describe(`${name} adapter conformance`, () => {
    const definitions = new Map((options.catalog ?? ShippedCatalog.models).map((model) => [model.slug, model]))
    const adapter = makeAdapter()
    const inputOf = (model: Catalog.ModelDefinition) => options.inputs?.[model.slug] ?? sampleInput(model)
    const handlers = options.handlers
    const server = handlers === undefined ? undefined : setupServer(...handlers)
    if (server !== undefined) {
      beforeAll(() => server.listen({ onUnhandledFrame: "error" }))
      afterEach(() => server.resetHandlers())
      afterAll(() => server.close())
    }

    it("declares the v1 interface and models of the catalog", () => {
      expect(adapter.specificationVersion).toBe("v1")
      expect(adapter.provider).toMatch(/^\S+$/)
      expect(adapter.models.length).toBeGreaterThan(0)
      expect(new Set(adapter.models).size).toBe(adapter.models.length)
      for (const model of adapter.models) expect(definitions.has(model), `${model} is in the catalog`).toBe(true)
      if (adapter.maxConcurrency !== undefined) {
        expect(Number.isSafeInteger(adapter.maxConcurrency) && adapter.maxConcurrency > 0).toBe(true)
      }
    })

    describe("runs every model it declares to a result of the model's category", () => {
      for (const slug of adapter.models) {
        it.live(slug, () =>
          Effect.gen(function* () {
            const model = definitions.get(slug)!
            const input = inputOf(model)
            const result = yield* runToEnd(adapter, { model: slug, input, reference: reference(slug) }, options)
            expect(result._tag).toBe("Succeeded")
            if (result._tag === "Succeeded") expectOutputsOf(model, input, result.outputs)
          })
        )
      }
    })

    it.live("refuses a model it does not serve with a Terminal ProviderError", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(adapter.submit({ model: "no-such-model", input: {}, reference: reference("unknown") }))
        expect(expectProviderError(error, "Terminal").errorCode).toBeTruthy()
      })
    )

    const first = adapter.models[0]!
    const request = () => ({ model: first, input: inputOf(definitions.get(first)!), reference: reference("errors") })

    // Cases for what the adapter does not do (lookup, HTTP calls) are not defined rather than skipped.
    if (adapter.lookup !== undefined) {
      const lookup = adapter.lookup
      it.live("finds an earlier submission by reference, and nothing for an unknown one", () =>
        Effect.gen(function* () {
          const submission = request()
          const submitted = yield* adapter.submit(submission)
          expect(yield* lookup({ model: first, reference: submission.reference })).toEqual({ upstreamId: submitted.upstreamId })
          expect(yield* lookup({ model: first, reference: reference("never-sent") })).toBeUndefined()
        })
      )
    }

    if (server === undefined) return

    const everything = (respond: () => Response) => server.use(http.all("*", respond))

    describe("classifies upstream HTTP failures", () => {
      it.live("a 5xx on submit is Retryable", () =>
        Effect.gen(function* () {
          everything(() => HttpResponse.json({ error: "boom" }, { status: 503 }))
          expectProviderError(yield* Effect.flip(adapter.submit(request())), "Retryable")
        })
      )

      it.live("a 401 on submit is Terminal with an errorCode", () =>
        Effect.gen(function* () {
          everything(() => HttpResponse.json({ error: "bad key" }, { status: 401 }))
          expect(expectProviderError(yield* Effect.flip(adapter.submit(request())), "Terminal").errorCode).toBeTruthy()
        })
      )

      it.live("a 429 on submit is RateLimited with Retry-After", () =>
        Effect.gen(function* () {
          everything(() => HttpResponse.json({ error: "slow down" }, { status: 429, headers: { "retry-after": "7" } }))
          expect(expectProviderError(yield* Effect.flip(adapter.submit(request())), "RateLimited").retryAfterMs).toBe(7000)
        })
      )

      it.live("a connection lost on submit is OutcomeUnknown", () =>
        Effect.gen(function* () {
          everything(() => HttpResponse.error())
          expectProviderError(yield* Effect.flip(adapter.submit(request())), "OutcomeUnknown")
        })
      )

      it.live("a 5xx or a lost connection on poll is Retryable", () =>
        Effect.gen(function* () {
          const submission = request()
          const submitted = yield* adapter.submit(submission)
          const poll = adapter.poll({ model: first, upstreamId: submitted.upstreamId, reference: submission.reference })
          everything(() => HttpResponse.json({ error: "boom" }, { status: 502 }))
          expectProviderError(yield* Effect.flip(poll), "Retryable")
          server.resetHandlers()
          everything(() => HttpResponse.error())
          expectProviderError(yield* Effect.flip(poll), "Retryable")
        })
      )
    })
  })
}
