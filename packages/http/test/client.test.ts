import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { Errors } from "@taskmeter/kernel"
import { Api } from "../src/Api.ts"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

/** A typed client of the API definition alone, sending `secret` as the Bearer key. */
const clientFor = (secret: string) =>
  Effect.gen(function* () {
    return yield* HttpApiClient.make(Api, {
      baseUrl: yield* T.baseUrl,
      transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(secret))
    })
  }).pipe(Effect.provide(FetchHttpClient.layer))

layer(T.layer(stores[0]!), { excludeTestServices: true })("an HttpApiClient of Api", (it) => {
  describe("the API definition as a client", () => {
    it.effect("submits, polls and lists with decoded values", () =>
      Effect.gen(function* () {
        const who = yield* T.customer()
        const client = yield* clientFor(who.secret)
        const submitted = yield* client.jobs.create({
          headers: { "idempotency-key": "client-1" },
          payload: { model: T.MODEL, input: T.INPUT }
        })
        expect(submitted).toMatchObject({ model: T.MODEL, status: "queued", replayed: false })
        const polled = yield* client.jobs.get({ params: { id: submitted.id } })
        expect(polled.id).toBe(submitted.id)
        const { data } = yield* client.jobs.list({ query: {} })
        expect(data.map((task) => task.id)).toEqual([submitted.id])
        const prices = yield* client.catalog.prices()
        expect(prices.models.length).toBe(33)
      })
    )

    it.effect("fails with the kernel's error classes, decoded from { code, error }", () =>
      Effect.gen(function* () {
        const who = yield* T.customer()
        const client = yield* clientFor(who.secret)
        const missing = yield* Effect.flip(client.jobs.get({ params: { id: "task_00000000-0000-4000-8000-000000000000" } }))
        expect(missing).toBeInstanceOf(Errors.JobNotFound)
        const conflict = yield* client.jobs
          .create({
            headers: { "idempotency-key": "client-2" },
            payload: { model: T.MODEL, input: T.INPUT }
          })
          .pipe(
            Effect.andThen(
              client.jobs.create({
                headers: { "idempotency-key": "client-2" },
                payload: { model: T.MODEL, input: { prompt: "another" } }
              })
            ),
            Effect.flip
          )
        expect(conflict).toBeInstanceOf(Errors.IdempotencyConflict)
        const anonymous = yield* clientFor("tm_not-a-key")
        expect(yield* Effect.flip(anonymous.jobs.list({ query: {} }))).toBeInstanceOf(Errors.AuthRequired)
      })
    )
  })
})
