import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Ledger, Money } from "@taskmeter/kernel"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

for (const store of stores) {
  layer(T.layer(store), { excludeTestServices: true })(`usage over ${store.name}`, (it) => {
    describe("GET /api/v1/usage", () => {
      it.effect("shows balances and the ledger entries newest first", () =>
        Effect.gen(function* () {
          const who = yield* T.customer(1_000_000)
          const { body: task } = yield* T.submit(who)
          const reply = yield* T.usage(who)
          expect(reply.status).toBe(200)
          expect(reply.body).toEqual({
            balanceMicros: 1_000_000,
            reservedMicros: T.MODEL_PRICE,
            availableMicros: 1_000_000 - T.MODEL_PRICE,
            currency: "USD",
            paymentReview: false,
            entries: [
              expect.objectContaining({ kind: "reserve", amountMicros: T.MODEL_PRICE, taskId: task.id, chatRequestId: null }),
              expect.objectContaining({ kind: "grant", amountMicros: 1_000_000, taskId: null })
            ],
            nextCursor: null
          })
          expect(Date.parse(reply.body.entries[0].createdAt)).not.toBeNaN()
        })
      )

      it.effect("pages with limit and before = nextCursor", () =>
        Effect.gen(function* () {
          const who = yield* T.customer(1_000_000)
          const ledger = yield* Ledger.Ledger
          for (const amount of [1, 2, 3]) yield* ledger.grant(who.accountId, Money.micros(amount))
          const amounts: Array<number> = []
          let query = "?limit=2"
          for (let page = 0; page < 3; page++) {
            const { body } = yield* T.usage(who, query)
            amounts.push(...body.entries.map((entry: { amountMicros: number }) => entry.amountMicros))
            if (body.nextCursor === null) break
            query = `?limit=2&before=${encodeURIComponent(body.nextCursor)}`
          }
          expect(amounts).toEqual([3, 2, 1, 1_000_000])
        })
      )

      it.effect("refuses a limit outside 1 to 100: 400 INVALID_REQUEST naming limit", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          for (const limit of ["0", "101", "2.5", "ten"]) {
            const reply = yield* T.usage(who, `?limit=${limit}`)
            expect(reply.status, limit).toBe(400)
            expect(reply.body.code).toBe("INVALID_REQUEST")
            expect(reply.body.error).toContain("limit")
          }
          expect((yield* T.usage(who, "?limit=100")).status).toBe(200)
        })
      )

      it.effect("answers an unknown or another account's cursor with 404 REQUEST_NOT_FOUND", () =>
        Effect.gen(function* () {
          const owner = yield* T.customer()
          yield* (yield* Ledger.Ledger).grant(owner.accountId, Money.micros(5))
          const { body } = yield* T.usage(owner, "?limit=1")
          expect(body.nextCursor).not.toBeNull()
          const stranger = yield* T.customer()
          for (const cursor of [body.nextCursor, "bogus"]) {
            const reply = yield* T.usage(stranger, `?before=${encodeURIComponent(cursor)}`)
            expect(reply.status).toBe(404)
            expect(reply.body.code).toBe("REQUEST_NOT_FOUND")
          }
        })
      )
    })
  })
}
