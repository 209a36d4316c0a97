import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const store = stores[0]!

describe("account limits on POST /api/v1/jobs", () => {
  layer(T.layer(store, { runner: { submissionsPerMinute: 2 } }), { excludeTestServices: true })("rate", (it) => {
    it.effect("answers the submission past the per-minute rate with 429 RATE_LIMITED and Retry-After", () =>
      Effect.gen(function* () {
        const who = yield* T.customer()
        expect((yield* T.submit(who)).status).toBe(202)
        expect((yield* T.submit(who)).status).toBe(202)
        const reply = yield* T.submit(who)
        expect(reply.status).toBe(429)
        expect(reply.body.code).toBe("RATE_LIMITED")
        const retryAfter = Number(reply.headers.get("retry-after"))
        expect(retryAfter).toBeGreaterThanOrEqual(1)
        expect(retryAfter).toBeLessThanOrEqual(60)
        expect((yield* T.usage(who)).body.reservedMicros).toBe(2 * T.MODEL_PRICE)
      })
    )
  })

  layer(T.layer(store, { runner: { maxUnfinishedTasks: 1 } }), { excludeTestServices: true })("concurrency", (it) => {
    it.effect("answers a submission past the unfinished-task limit with 429 CONCURRENCY_LIMITED and Retry-After", () =>
      Effect.gen(function* () {
        const who = yield* T.customer()
        const { body: first } = yield* T.submit(who)
        const reply = yield* T.submit(who)
        expect(reply.status).toBe(429)
        expect(reply.body.code).toBe("CONCURRENCY_LIMITED")
        expect(reply.headers.get("retry-after")).toBe("5")
        yield* T.succeedWithResult(who, first.id, T.PNG)
        expect((yield* T.submit(who)).status).toBe(202)
      })
    )
  })
})
