/**
 * A model's daily platform budget through the composed server: set and removed with the admin
 * service, enforced on POST /api/v1/jobs (503 PLATFORM_BUDGET_EXCEEDED with Retry-After to
 * 00:00 UTC), kept out of GET /api/v1/prices, and held across two servers sharing PostgreSQL.
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { BudgetStore, type Money } from "@taskmeter/kernel"
import * as Main from "../src/main.ts"
import {
  admin,
  ALSO_SERVED,
  ALSO_SERVED_PRICE,
  eventually,
  fetchJson,
  SERVED,
  SERVED_PRICE,
  serverOn,
  twoServers
} from "./support/Servers.ts"

/** POST /api/v1/jobs of the model to the server at `url`, with a fresh Idempotency-Key unless given. */
const submit = (url: string, secret: string, model = SERVED, idempotencyKey: string = randomUUID()) =>
  fetchJson(`${url}/api/v1/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", "idempotency-key": idempotencyKey },
    body: JSON.stringify({ model, input: { prompt: "rain at the harbour" } })
  })

const reservedOf = (url: string, secret: string) =>
  Effect.map(
    fetchJson(`${url}/api/v1/usage`, { headers: { authorization: `Bearer ${secret}` } }),
    (reply) => reply.body.reservedMicros as number
  )

const newCustomer = (url: string) =>
  Effect.map(
    admin(url, (client) => client.AccountCreate({ name: "acme", creditsMicros: 10_000_000 as Money.Micros })),
    ({ key }) => key.secret
  )

describe("a model's daily platform budget", () => {
  it.live(
    "set with the admin service, it refuses submissions past it until 00:00 UTC; removed, it admits again",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const url = yield* serverOn({ ...Main.defaults, workers: false })
          const secret = yield* newCustomer(url)
          const set = yield* admin(url, (client) =>
            client.PriceSet({ model: SERVED, dailyBudgetMicros: (3 * SERVED_PRICE + 1) as Money.Micros })
          )
          expect(set).toEqual({ enabled: true, priceMicros: SERVED_PRICE, dailyBudgetMicros: 3 * SERVED_PRICE + 1 })

          const first = randomUUID()
          for (const key of [first, randomUUID(), randomUUID()])
            expect((yield* submit(url, secret, SERVED, key)).status).toBe(202)
          const latest = BudgetStore.secondsToNextDay(Date.now())
          const refused = yield* submit(url, secret)
          const earliest = BudgetStore.secondsToNextDay(Date.now())
          expect(refused.status).toBe(503)
          expect(refused.body).toEqual({
            code: "PLATFORM_BUDGET_EXCEEDED",
            error: expect.stringContaining(`Model ${SERVED} is unavailable until 00:00 UTC`)
          })
          const retryAfter = Number(refused.headers.get("retry-after"))
          expect(retryAfter).toBeLessThanOrEqual(latest)
          expect(retryAfter).toBeGreaterThanOrEqual(earliest)
          expect(yield* reservedOf(url, secret)).toBe(3 * SERVED_PRICE)

          // A retry of an admitted submission still replays; a model without a budget is not held back.
          const replay = yield* submit(url, secret, SERVED, first)
          expect(replay).toMatchObject({ status: 200, body: { replayed: true } })
          expect((yield* submit(url, secret, ALSO_SERVED)).status).toBe(202)

          // The budget is the operator's: the price list shows it, the public prices do not.
          expect((yield* admin(url, (client) => client.PriceList())).models[SERVED]?.dailyBudgetMicros).toBe(3 * SERVED_PRICE + 1)
          const prices = yield* fetchJson(`${url}/api/v1/prices`)
          expect(prices.body.models.find((entry: { model: string }) => entry.model === SERVED)).toEqual({
            model: SERVED,
            enabled: true,
            currency: "USD",
            priceMicros: SERVED_PRICE
          })
          expect(JSON.stringify(prices.body)).not.toContain("dailyBudget")

          // A price set without a budget keeps it; none removes it.
          const repriced = yield* admin(url, (client) =>
            client.PriceSet({ model: SERVED, entry: { enabled: true, priceMicros: SERVED_PRICE as Money.Micros } })
          )
          expect(repriced.dailyBudgetMicros).toBe(3 * SERVED_PRICE + 1)
          expect((yield* submit(url, secret)).status).toBe(503)
          const removed = yield* admin(url, (client) => client.PriceSet({ model: SERVED, dailyBudgetMicros: null }))
          expect(removed).toEqual({ enabled: true, priceMicros: SERVED_PRICE })
          expect((yield* submit(url, secret)).status).toBe(202)
        })
      ),
    // The server starts on a PGlite made from nothing (every migration), slow on a busy machine.
    240_000
  )

  it.live("two servers on one PostgreSQL admit no more than the budget between them", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const servers = yield* twoServers("http_budgets")
        const [one, other] = servers
        const budget = 12 * SERVED_PRICE
        yield* admin(one, (client) => client.PriceSet({ model: SERVED, dailyBudgetMicros: budget as Money.Micros }))
        const seen = yield* eventually(
          admin(other, (client) => client.PriceList()),
          (list) => list.models[SERVED]?.dailyBudgetMicros === budget
        )
        expect(seen.models[SERVED]?.dailyBudgetMicros).toBe(budget)

        // Four accounts, ten submissions each (their limit of unfinished tasks), spread over both servers at once.
        const secrets = yield* Effect.all([one, other, one, other].map(newCustomer))
        const replies = yield* Effect.all(
          secrets.flatMap((secret) => Array.from({ length: 10 }, (_, i) => submit(servers[i % 2]!, secret))),
          { concurrency: "unbounded" }
        )
        const statuses = replies.map((reply) => reply.status)
        expect(statuses.filter((status) => status === 202)).toHaveLength(12)
        expect(replies.filter((reply) => reply.status === 503 && reply.body.code === "PLATFORM_BUDGET_EXCEEDED")).toHaveLength(28)
        const reserved = yield* Effect.all(secrets.map((secret) => reservedOf(one, secret)))
        expect(reserved.reduce((sum, each) => sum + each, 0)).toBe(budget)

        const unbudgeted = yield* submit(other, yield* newCustomer(one), ALSO_SERVED)
        expect(unbudgeted).toMatchObject({ status: 202, body: { priceMicros: ALSO_SERVED_PRICE } })
      })
    )
  )
})
