import { randomUUID } from "node:crypto"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Accounts } from "@taskmeter/kernel"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const jobsOf = (headers: Record<string, string>) => T.call("/api/v1/jobs", { headers })

/** POST /api/v1/jobs with the given credential headers. */
const submitWith = (
  headers: Record<string, string>,
  body: unknown = { model: T.MODEL, input: T.INPUT },
  idempotencyKey: string = randomUUID()
) =>
  T.call("/api/v1/jobs", {
    method: "POST",
    headers: { ...headers, "content-type": "application/json", "idempotency-key": idempotencyKey },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

const SUBMIT_SCOPE_REFUSAL = "This API key lacks the scope jobs:create, which POST /api/v1/jobs needs; use a key that has it."

for (const store of stores) {
  layer(T.layer(store), { excludeTestServices: true })(`authentication over ${store.name}`, (it) => {
    describe("credentials", () => {
      it.effect("accepts the key as Authorization: Bearer and as x-api-key", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          expect((yield* jobsOf({ authorization: `Bearer ${who.secret}` })).status).toBe(200)
          expect((yield* jobsOf({ authorization: `bearer ${who.secret}` })).status).toBe(200)
          expect((yield* jobsOf({ "x-api-key": who.secret })).status).toBe(200)
          const submitted = yield* T.call("/api/v1/jobs", {
            method: "POST",
            headers: { "x-api-key": who.secret, "content-type": "application/json", "idempotency-key": "k" },
            body: JSON.stringify({ model: T.MODEL, input: T.INPUT })
          })
          expect(submitted.status).toBe(202)
        })
      )

      it.effect("answers 401 AUTH_REQUIRED without a key, with an unknown key and with another scheme", () =>
        Effect.gen(function* () {
          const cases: Array<Record<string, string>> = [
            {},
            { authorization: "Bearer tm_unknown" },
            { "x-api-key": "tm_unknown" },
            { authorization: "Basic dXNlcjpwYXNz" },
            { authorization: "Bearer " }
          ]
          for (const headers of cases) {
            const reply = yield* jobsOf(headers)
            expect(reply.status, JSON.stringify(headers)).toBe(401)
            expect(reply.body.code).toBe("AUTH_REQUIRED")
            expect(Object.keys(reply.body).sort()).toEqual(["code", "error"])
          }
          const missing = yield* jobsOf({})
          expect(missing.body.error).toContain("x-api-key")
        })
      )

      it.effect("answers 403 PERMISSION_DENIED for a revoked key", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          yield* (yield* Accounts.Accounts).revokeKey(who.accountId, who.keyId)
          const reply = yield* jobsOf(T.bearer(who.secret))
          expect(reply.status).toBe(403)
          expect(reply.body.code).toBe("PERMISSION_DENIED")
        })
      )

      it.effect("answers 429 API_KEY_RATE_LIMITED with Retry-After past the key's rate", () =>
        Effect.gen(function* () {
          const who = yield* T.customer(10_000_000, { rateLimitPerMinute: 2 })
          expect((yield* jobsOf(T.bearer(who.secret))).status).toBe(200)
          expect((yield* jobsOf(T.bearer(who.secret))).status).toBe(200)
          const reply = yield* jobsOf(T.bearer(who.secret))
          expect(reply.status).toBe(429)
          expect(reply.body.code).toBe("API_KEY_RATE_LIMITED")
          const retryAfter = Number(reply.headers.get("retry-after"))
          expect(retryAfter).toBeGreaterThanOrEqual(1)
          expect(retryAfter).toBeLessThanOrEqual(60)
        })
      )

      it.effect(
        "answers 503 AUTH_UNAVAILABLE when the account store is down, otherwise API_UNAVAILABLE, EXECUTION_TEMPORARILY_UNAVAILABLE for a submission",
        () =>
          Effect.gen(function* () {
            const who = yield* T.customer()
            yield* T.setOutage("accounts")
            const auth = yield* jobsOf(T.bearer(who.secret))
            const submitWithoutKeys = yield* T.submit(who).pipe(Effect.ensuring(T.setOutage()))
            expect(auth.status).toBe(503)
            expect(auth.body.code).toBe("AUTH_UNAVAILABLE")
            // The submission's one store call checks the key and admits: it may have admitted.
            expect(submitWithoutKeys.status).toBe(503)
            expect(submitWithoutKeys.body.code).toBe("EXECUTION_TEMPORARILY_UNAVAILABLE")
            yield* T.setOutage("tasks")
            const list = yield* jobsOf(T.bearer(who.secret))
            const submit = yield* T.submit(who)
            const usage = yield* T.usage(who).pipe(Effect.ensuring(T.setOutage()))
            expect(list.status).toBe(503)
            expect(list.body.code).toBe("API_UNAVAILABLE")
            // A submission is authenticated within its admission, one task-store call, which may have
            // admitted the task: the answer says to retry with the same Idempotency-Key.
            expect(submit.status).toBe(503)
            expect(submit.body.code).toBe("EXECUTION_TEMPORARILY_UNAVAILABLE")
            expect(submit.body.error).toContain("same Idempotency-Key")
            expect(submit.headers.get("retry-after")).toBe("1")
            expect(usage.status).toBe(200)
          })
      )
    })

    describe("scopes", () => {
      it.effect("a read-only key reads but cannot submit or upload: 403 INSUFFICIENT_SCOPE", () =>
        Effect.gen(function* () {
          const reader = yield* T.customer(10_000_000, { scopes: ["jobs:read", "usage:read"] })
          expect((yield* jobsOf(T.bearer(reader.secret))).status).toBe(200)
          expect((yield* T.usage(reader)).status).toBe(200)
          const submit = yield* T.submit(reader)
          const upload = yield* T.call("/api/v1/media", {
            method: "POST",
            headers: { ...T.bearer(reader.secret), "content-type": "image/png" },
            body: T.PNG
          })
          for (const reply of [submit, upload]) {
            expect(reply.status).toBe(403)
            expect(reply.body.code).toBe("INSUFFICIENT_SCOPE")
            expect(reply.body.error).toContain("jobs:create")
          }
        })
      )

      it.effect("a submit-only key cannot read tasks, results or usage: 403 INSUFFICIENT_SCOPE", () =>
        Effect.gen(function* () {
          const writer = yield* T.customer(10_000_000, { scopes: ["jobs:create"] })
          const submitted = yield* T.submit(writer)
          expect(submitted.status).toBe(202)
          for (const path of [
            "/api/v1/jobs",
            `/api/v1/jobs/${submitted.body.id}`,
            "/api/v1/results/00000000-0000-4000-8000-000000000000",
            "/api/v1/usage"
          ]) {
            const reply = yield* T.call(path, { headers: T.bearer(writer.secret) })
            expect(reply.status, path).toBe(403)
            expect(reply.body.code).toBe("INSUFFICIENT_SCOPE")
          }
        })
      )
    })

    describe("POST /api/v1/jobs, whose key is authenticated within the admission", () => {
      it.effect("submits with the key as Authorization: Bearer or as x-api-key, Bearer winning", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          expect((yield* submitWith({ authorization: `Bearer ${who.secret}` })).status).toBe(202)
          expect((yield* submitWith({ "x-api-key": who.secret })).status).toBe(202)
          expect((yield* submitWith({ authorization: `Bearer ${who.secret}`, "x-api-key": "tm_unknown" })).status).toBe(202)
          const unknownBearer = yield* submitWith({ authorization: "Bearer tm_unknown", "x-api-key": who.secret })
          expect(unknownBearer.status).toBe(401)
          expect(unknownBearer.body.code).toBe("AUTH_REQUIRED")
          expect((yield* T.usage(who)).body.reservedMicros).toBe(3 * T.MODEL_PRICE)
        })
      )

      it.effect("answers the key's refusal before a bad Idempotency-Key, a bad body or a body too large", () =>
        Effect.gen(function* () {
          const accounts = yield* Accounts.Accounts
          const revoked = yield* T.customer()
          yield* accounts.revokeKey(revoked.accountId, revoked.keyId)
          const reader = yield* T.customer(10_000_000, { scopes: ["jobs:read", "usage:read"] })
          const limited = yield* T.customer(10_000_000, { rateLimitPerMinute: 1 })
          expect((yield* jobsOf(T.bearer(limited.secret))).status).toBe(200)
          const good = yield* T.customer()
          const tooLarge = JSON.stringify({ model: T.MODEL, input: { prompt: "x".repeat(300 * 1024) } })
          const cases: Array<[string, ReturnType<typeof submitWith>, number, string]> = [
            ["revoked key, bad Idempotency-Key", T.submit(revoked, undefined, "caf\u00e9"), 403, "PERMISSION_DENIED"],
            ["revoked key, no Idempotency-Key", T.submit(revoked, undefined, null), 403, "PERMISSION_DENIED"],
            [
              "revoked key as x-api-key, bad body",
              submitWith({ "x-api-key": revoked.secret }, "{not json"),
              403,
              "PERMISSION_DENIED"
            ],
            ["revoked key, body too large", T.submit(revoked, tooLarge), 403, "PERMISSION_DENIED"],
            ["read-only key, invalid body", T.submit(reader, { model: T.MODEL }), 403, "INSUFFICIENT_SCOPE"],
            ["key past its rate, bad body", T.submit(limited, "[1, 2]"), 429, "API_KEY_RATE_LIMITED"],
            ["no key, bad body", submitWith({}, "{not json"), 401, "AUTH_REQUIRED"],
            ["malformed key, bad Idempotency-Key", submitWith(T.bearer("not-a-key"), undefined, ""), 401, "AUTH_REQUIRED"],
            ["good key, body too large", T.submit(good, tooLarge), 413, "INPUT_TOO_LARGE"],
            ["good key, bad Idempotency-Key", T.submit(good, undefined, "caf\u00e9"), 400, "INVALID_IDEMPOTENCY_KEY"],
            ["good key, invalid body", T.submit(good, { model: T.MODEL }), 400, "INVALID_REQUEST"]
          ]
          for (const [name, request, status, code] of cases) {
            const reply = yield* request
            expect(reply.status, name).toBe(status)
            expect(reply.body.code, name).toBe(code)
          }
          expect((yield* T.submit(reader, { model: T.MODEL })).body.error).toBe(SUBMIT_SCOPE_REFUSAL)
          expect((yield* T.usage(good)).body.reservedMicros).toBe(0)
        })
      )

      it.effect("names the endpoint in INSUFFICIENT_SCOPE, as the other endpoints do", () =>
        Effect.gen(function* () {
          const reader = yield* T.customer(10_000_000, { scopes: ["jobs:read"] })
          for (const model of [T.MODEL, T.MEDIA_MODEL, "no-such-model"]) {
            const reply = yield* T.submit(reader, { model, input: T.INPUT })
            expect(reply.status, model).toBe(403)
            expect(reply.body).toEqual({ code: "INSUFFICIENT_SCOPE", error: SUBMIT_SCOPE_REFUSAL })
          }
        })
      )

      it.effect("counts each submission once against the key's rate, whatever it answers", () =>
        Effect.gen(function* () {
          const who = yield* T.customer(10_000_000, { rateLimitPerMinute: 3 })
          expect((yield* T.submit(who, "{not json")).status).toBe(400)
          expect((yield* T.submit(who, { model: "no-such-model", input: T.INPUT })).status).toBe(404)
          expect((yield* T.submit(who)).status).toBe(202)
          expect((yield* T.submit(who)).body.code).toBe("API_KEY_RATE_LIMITED")
        })
      )
    })

    describe("public endpoints and unknown routes", () => {
      it.effect("serves prices, models and the OpenAPI document without credentials", () =>
        Effect.gen(function* () {
          for (const path of ["/api/v1/prices", "/api/v1/models", "/api/openapi.json"]) {
            expect((yield* T.call(path)).status, path).toBe(200)
          }
        })
      )

      it.effect("answers an unknown route with 404 NOT_FOUND naming its method and path", () =>
        Effect.gen(function* () {
          const reply = yield* T.call("/api/v1/nothing-here?x=1", { method: "DELETE" })
          expect(reply.status).toBe(404)
          expect(reply.body).toEqual({
            code: "NOT_FOUND",
            error: "No endpoint DELETE /api/v1/nothing-here; the API is described at /api/openapi.json."
          })
          const known = yield* T.call("/api/v1/prices", { method: "DELETE" })
          expect(known.status).toBe(404)
          expect(known.body).toMatchObject({ code: "NOT_FOUND", error: expect.stringContaining("DELETE /api/v1/prices") })
        })
      )
    })
  })
}
