import { request as httpRequest } from "node:http"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Ledger, Money, Pricer } from "@taskmeter/kernel"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

for (const store of stores) {
  layer(T.layer(store), { excludeTestServices: true })(`jobs over ${store.name}`, (it) => {
    describe("POST /api/v1/jobs", () => {
      it.effect("accepts a task with 202 and reserves its price", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const reply = yield* T.submit(who)
          expect(reply.status).toBe(202)
          expect(reply.body).toMatchObject({
            model: T.MODEL,
            status: "queued",
            errorCode: null,
            priceMicros: T.MODEL_PRICE,
            currency: "USD",
            assets: [],
            replayed: false
          })
          expect(reply.body.id).toMatch(/^task_/)
          expect(Date.parse(reply.body.createdAt)).toBeGreaterThan(Date.parse("2020-01-01"))
          const usage = yield* T.usage(who)
          expect(usage.body).toMatchObject({ reservedMicros: T.MODEL_PRICE, availableMicros: 10_000_000 - T.MODEL_PRICE })
        })
      )

      it.effect("replays a retry with the same key and body: 200, replayed, nothing reserved twice", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const first = yield* T.submit(who, undefined, "retry-me")
          const again = yield* T.submit(who, undefined, "retry-me")
          expect(again.status).toBe(200)
          expect(again.body).toEqual({ ...first.body, replayed: true })
          const usage = yield* T.usage(who)
          expect(usage.body.reservedMicros).toBe(T.MODEL_PRICE)
          expect(usage.body.entries.filter((entry: { kind: string }) => entry.kind === "reserve")).toHaveLength(1)
        })
      )

      it.effect("refuses the same key with a different body: 409 IDEMPOTENCY_CONFLICT", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          yield* T.submit(who, undefined, "one-key")
          const reply = yield* T.submit(who, { model: T.MODEL, input: { prompt: "something else" } }, "one-key")
          expect(reply.status).toBe(409)
          expect(reply.body.code).toBe("IDEMPOTENCY_CONFLICT")
          expect((yield* T.usage(who)).body.reservedMicros).toBe(T.MODEL_PRICE)
        })
      )

      it.effect("refuses a price the caller did not see: 409 PRICE_CHANGED, nothing reserved", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const reply = yield* T.submit(who, { model: T.MODEL, input: T.INPUT, expectedPriceMicros: T.MODEL_PRICE - 1 })
          expect(reply.status).toBe(409)
          expect(reply.body.code).toBe("PRICE_CHANGED")
          expect((yield* T.usage(who)).body.reservedMicros).toBe(0)
          const ok = yield* T.submit(who, { model: T.MODEL, input: T.INPUT, expectedPriceMicros: T.MODEL_PRICE })
          expect(ok.status).toBe(202)
        })
      )

      it.effect("requires an Idempotency-Key of 1 to 128 printable ASCII characters: 400 INVALID_IDEMPOTENCY_KEY", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          for (const key of [null, "", "x".repeat(129), "tab\tkey", "caf\u00e9"]) {
            const reply = yield* T.submit(who, undefined, key)
            expect(reply.status).toBe(400)
            expect(reply.body).toEqual({ code: "INVALID_IDEMPOTENCY_KEY", error: expect.stringContaining("Idempotency-Key") })
          }
          expect((yield* T.submit(who, undefined, "x".repeat(128))).status).toBe(202)
        })
      )

      it.effect(
        "refuses two Idempotency-Key headers, which Node would join into one valid-looking key: 400 INVALID_IDEMPOTENCY_KEY, nothing reserved",
        () =>
          Effect.gen(function* () {
            const who = yield* T.customer()
            const base = yield* T.baseUrl
            const body = JSON.stringify({ model: T.MODEL, input: T.INPUT })
            // fetch would send one header "a, b"; node:http sends each pair of a flat list as its own line (and adds no Host).
            const reply = yield* Effect.promise(
              () =>
                new Promise<{ status: number; body: any }>((resolve, reject) => {
                  const request = httpRequest(
                    `${base}/api/v1/jobs`,
                    {
                      method: "POST",
                      headers: [
                        "host",
                        new URL(base).host,
                        "authorization",
                        `Bearer ${who.secret}`,
                        "content-type",
                        "application/json",
                        "content-length",
                        String(Buffer.byteLength(body)),
                        "idempotency-key",
                        "first-key",
                        "idempotency-key",
                        "second-key"
                      ]
                    },
                    (response) => {
                      let text = ""
                      response
                        .setEncoding("utf8")
                        .on("data", (chunk: string) => (text += chunk))
                        .on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }))
                    }
                  )
                  request.on("error", reject).end(body)
                })
            )
            expect(reply.status).toBe(400)
            expect(reply.body).toEqual({
              code: "INVALID_IDEMPOTENCY_KEY",
              error: expect.stringContaining("one Idempotency-Key header")
            })
            expect((yield* T.usage(who)).body.reservedMicros).toBe(0)
            expect((yield* T.submit(who, undefined, "first-key, second-key")).status).toBe(202)
          })
      )

      it.effect("says what is wrong with a body that is not a JSON object with model and input: 400 INVALID_REQUEST", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const cases: Array<[unknown, string]> = [
            ["{not json", "not valid JSON"],
            ["[1, 2]", "must be a JSON object"],
            ['"text"', "must be a JSON object"],
            [{ input: T.INPUT }, "model: is required"],
            [{ model: T.MODEL }, "input: is required"],
            [{ model: T.MODEL, input: "prompt" }, "input:"],
            [{ model: T.MODEL, input: T.INPUT, expectedPriceMicros: 1.5 }, "expectedPriceMicros:"],
            [{ model: T.MODEL, input: T.INPUT, expectedPrice: 1 }, "expectedPrice: is not a field of the request"]
          ]
          for (const [body, message] of cases) {
            const reply = yield* T.submit(who, body)
            expect(reply.status, JSON.stringify(body)).toBe(400)
            expect(reply.body.code).toBe("INVALID_REQUEST")
            expect(reply.body.error).toContain(message)
          }
          expect((yield* T.usage(who)).body.reservedMicros).toBe(0)
        })
      )

      it.effect("needs a JSON body with a JSON Content-Type: 400 INVALID_REQUEST", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const headers = { ...T.bearer(who.secret), "idempotency-key": "k" }
          const empty = yield* T.call("/api/v1/jobs", {
            method: "POST",
            headers: { ...headers, "content-type": "application/json" }
          })
          expect(empty.status).toBe(400)
          expect(empty.body).toEqual({ code: "INVALID_REQUEST", error: "A JSON body is required." })
          const form = yield* T.call("/api/v1/jobs", {
            method: "POST",
            headers: { ...headers, "content-type": "application/x-www-form-urlencoded" },
            body: "model=x"
          })
          expect(form.status).toBe(400)
          expect(form.body.code).toBe("INVALID_REQUEST")
          expect(form.body.error).toContain("Content-Type: application/json")
        })
      )

      it.effect("refuses a body over 256 KB with 413 INPUT_TOO_LARGE, with or without Content-Length", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const big = JSON.stringify({ model: T.MODEL, input: { prompt: "x".repeat(300 * 1024) } })
          const declared = yield* T.submit(who, big)
          expect(declared.status).toBe(413)
          expect(declared.body.code).toBe("INPUT_TOO_LARGE")
          const bytes = new TextEncoder().encode(big)
          const streamed = yield* T.call("/api/v1/jobs", {
            method: "POST",
            headers: { ...T.bearer(who.secret), "content-type": "application/json", "idempotency-key": "k" },
            body: new ReadableStream({
              start(controller) {
                for (let i = 0; i < bytes.length; i += 16 * 1024) controller.enqueue(bytes.subarray(i, i + 16 * 1024))
                controller.close()
              }
            }),
            duplex: "half"
          } as RequestInit)
          expect(streamed.status).toBe(413)
          expect(streamed.body.code).toBe("INPUT_TOO_LARGE")
          expect((yield* T.usage(who)).body.reservedMicros).toBe(0)
        })
      )

      it.effect("accepts a body just under 256 KB (the limit is the spec's, not lower)", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const reply = yield* T.submit(who, { model: T.MODEL, input: { prompt: "x".repeat(250 * 1024) } })
          expect(reply.status).toBe(202)
        })
      )

      it.effect("reports input the model does not accept: 400 INVALID_MODEL_INPUT", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const reply = yield* T.submit(who, { model: T.MODEL, input: { ...T.INPUT, colour: "red" } })
          expect(reply.status).toBe(400)
          expect(reply.body.code).toBe("INVALID_MODEL_INPUT")
          expect(reply.body.error).toContain("input.colour")
        })
      )

      it.effect("reports an unknown model: 404 MODEL_NOT_FOUND, naming the route that lists the models", () =>
        Effect.gen(function* () {
          const reply = yield* T.submit(yield* T.customer(), { model: "no-such-model", input: {} })
          expect(reply.status).toBe(404)
          expect(reply.body.code).toBe("MODEL_NOT_FOUND")
          expect(reply.body.error).toBe(
            'No model has the slug "no-such-model"; use the slug of a listed model: GET /api/v1/models lists them.'
          )
        })
      )

      it.effect("refuses a model without a price: 409 MODEL_PRICE_UNAVAILABLE", () =>
        Effect.gen(function* () {
          const pricer = yield* Pricer.Pricer
          const slug = "picgen-2-0-text-to-image-economy"
          yield* pricer.disable(slug)
          const reply = yield* T.submit(yield* T.customer(), { model: slug, input: { prompt: "a fox" } })
          expect(reply.status).toBe(409)
          expect(reply.body.code).toBe("MODEL_PRICE_UNAVAILABLE")
        })
      )

      it.effect("refuses a model no worker serves: 503 EXECUTION_UNAVAILABLE", () =>
        Effect.gen(function* () {
          const reply = yield* T.submit(yield* T.customer(), { model: T.UNSERVED_MODEL, input: { prompt: "the sea" } })
          expect(reply.status).toBe(503)
          expect(reply.body.code).toBe("EXECUTION_UNAVAILABLE")
        })
      )

      it.effect("refuses a task the credits do not cover: 409 INSUFFICIENT_CREDITS", () =>
        Effect.gen(function* () {
          const reply = yield* T.submit(yield* T.customer(T.MODEL_PRICE - 1))
          expect(reply.status).toBe(409)
          expect(reply.body.code).toBe("INSUFFICIENT_CREDITS")
        })
      )

      it.effect("refuses submissions while a refund is uncovered: 409 PAYMENT_REVIEW_REQUIRED", () =>
        Effect.gen(function* () {
          const who = yield* T.customer(1_000_000)
          yield* (yield* Ledger.Ledger).refund(who.accountId, Money.micros(2_000_000))
          const reply = yield* T.submit(who)
          expect(reply.status).toBe(409)
          expect(reply.body.code).toBe("PAYMENT_REVIEW_REQUIRED")
          expect((yield* T.usage(who)).body.paymentReview).toBe(true)
        })
      )

      it.effect("refuses a submission past the key's usage limit: 429 API_KEY_USAGE_EXCEEDED", () =>
        Effect.gen(function* () {
          const who = yield* T.customer(10_000_000, { usageLimit: 1 })
          expect((yield* T.submit(who)).status).toBe(202)
          const reply = yield* T.submit(who)
          expect(reply.status).toBe(429)
          expect(reply.body.code).toBe("API_KEY_USAGE_EXCEEDED")
          expect(reply.headers.get("retry-after")).not.toBeNull()
        })
      )
    })

    describe("GET /api/v1/jobs and /api/v1/jobs/{id}", () => {
      it.effect("lists the caller's tasks newest first in { data }", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const first = yield* T.submit(who)
          const second = yield* T.submit(who)
          yield* T.submit(yield* T.customer())
          const reply = yield* T.call("/api/v1/jobs", { headers: T.bearer(who.secret) })
          expect(reply.status).toBe(200)
          expect(reply.body.data.map((task: { id: string }) => task.id)).toEqual([second.body.id, first.body.id])
          expect(reply.body.data[0]).not.toHaveProperty("replayed")
        })
      )

      it.effect("shows an own task without `replayed`", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const { body: submitted } = yield* T.submit(who)
          const reply = yield* T.call(`/api/v1/jobs/${submitted.id}`, { headers: T.bearer(who.secret) })
          expect(reply.status).toBe(200)
          const { replayed: _, ...task } = submitted
          expect(reply.body).toEqual(task)
        })
      )

      it.effect("answers 404 JOB_NOT_FOUND for another account's task, an unknown id and a malformed id", () =>
        Effect.gen(function* () {
          const owner = yield* T.customer()
          const stranger = yield* T.customer()
          const { body: task } = yield* T.submit(owner)
          for (const id of [task.id, "task_00000000-0000-4000-8000-000000000000", "not-an-id"]) {
            const reply = yield* T.call(`/api/v1/jobs/${id}`, { headers: T.bearer(stranger.secret) })
            expect(reply.status).toBe(404)
            expect(reply.body.code).toBe("JOB_NOT_FOUND")
          }
          const malformed = yield* T.call("/api/v1/jobs/not-an-id", { headers: T.bearer(stranger.secret) })
          expect(malformed.body.error).toContain("task_<uuid>")
        })
      )

      it.effect("links a succeeded task's result under /api/v1/results/<uuid>", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const { body: task } = yield* T.submit(who)
          const { resultId } = yield* T.succeedWithResult(who, task.id, T.PNG)
          const reply = yield* T.call(`/api/v1/jobs/${task.id}`, { headers: T.bearer(who.secret) })
          expect(reply.body.status).toBe("succeeded")
          expect(reply.body.assets).toEqual([{ id: "asset-1", type: "image", url: `/api/v1/results/${resultId}` }])
          const usage = yield* T.usage(who)
          expect(usage.body).toMatchObject({ reservedMicros: 0, balanceMicros: 10_000_000 - T.MODEL_PRICE })
        })
      )
    })
  })
}
