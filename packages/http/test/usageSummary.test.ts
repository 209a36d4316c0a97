/**
 * GET /api/v1/usage/summary: the caller's charges of a range of UTC days by day and by model,
 * under an API key with usage:read or a session; the default range, its bounds and the 400s.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { stores } from "./support/stores.ts"
import * as C from "./support/Console.ts"
import * as T from "./support/TestServer.ts"

const PNG = new Uint8Array([137, 80, 78, 71])
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)
const DAY_MS = 86_400_000

for (const store of stores) {
  layer(T.layer(store), { excludeTestServices: true })(`usage summary over ${store.name}`, (it) => {
    describe("GET /api/v1/usage/summary", () => {
      it.effect("sums the caller's charges of the last 30 UTC days by day and model, never another account's", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const other = yield* T.customer()
          for (const customer of [who, who, other]) {
            const { body: task } = yield* T.submit(customer)
            yield* T.succeedWithResult(customer, task.id, PNG)
          }
          // Queued only: reserved, not spent.
          yield* T.submit(who)
          const reply = yield* T.call("/api/v1/usage/summary", { headers: T.bearer(who.secret) })
          const today = dayOf(Date.now())
          const figures = { taskMicros: 2 * T.MODEL_PRICE, chatMicros: 0, totalMicros: 2 * T.MODEL_PRICE }
          expect([reply.status, reply.body]).toEqual([
            200,
            {
              from: dayOf(Date.parse(today) - 29 * DAY_MS),
              to: today,
              currency: "USD",
              ...figures,
              days: [{ day: today, ...figures }],
              models: [{ model: T.MODEL, ...figures }]
            }
          ])
          const before = yield* T.call(`/api/v1/usage/summary?from=2020-01-01&to=2020-12-31`, {
            headers: T.bearer(who.secret)
          })
          expect([before.status, before.body.days, before.body.models, before.body.totalMicros]).toEqual([200, [], [], 0])
        })
      )

      it.effect("answers a session like a key, and a key without usage:read with 403", () =>
        Effect.gen(function* () {
          const signedIn = yield* C.signUp()
          const reply = yield* C.under(signedIn, "/api/v1/usage/summary?from=2030-01-01&to=2030-01-31")
          expect([reply.status, reply.body.from, reply.body.to, reply.body.days]).toEqual([200, "2030-01-01", "2030-01-31", []])
          const narrow = yield* T.customer(10_000_000, { scopes: ["jobs:read"] })
          const forbidden = yield* T.call("/api/v1/usage/summary", { headers: T.bearer(narrow.secret) })
          expect(forbidden.status).toBe(403)
          expect((yield* T.call("/api/v1/usage/summary")).status).toBe(401)
        })
      )

      it.effect("takes at most 366 days, from not after to, calendar days: else 400 INVALID_REQUEST saying what to fix", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const ask = (query: string) => T.call(`/api/v1/usage/summary${query}`, { headers: T.bearer(who.secret) })
          const refusals: ReadonlyArray<readonly [string, string]> = [
            ["?from=2030-02-30", "from"],
            ["?to=2030-1-5", "to"],
            ["?from=yesterday", "YYYY-MM-DD"],
            ["?from=2030-03-02&to=2030-03-01", "from (2030-03-02) must be on or before to (2030-03-01)"],
            ["?from=2030-01-01&to=2031-01-02", "at most 366"],
            ["?to=2029-12-31&from=2028-12-30", "at most 366"]
          ]
          for (const [query, message] of refusals) {
            const reply = yield* ask(query)
            expect([reply.status, reply.body.code], query).toEqual([400, "INVALID_REQUEST"])
            expect(reply.body.error, query).toContain(message)
          }
          // A leap year's 366 days, and a lone to with its 30 days before.
          expect((yield* ask("?from=2028-01-01&to=2028-12-31")).status).toBe(200)
          const lone = yield* ask("?to=2030-03-01")
          expect([lone.status, lone.body.from]).toEqual([200, "2030-01-31"])
        })
      )
    })
  })
}
