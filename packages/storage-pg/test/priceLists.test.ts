/**
 * The price list on the real PostgreSQL, beyond the conformance suite: two stores on one schema,
 * each with its own pool, stand for two server processes. A save in one reaches the other's
 * subscribers through LISTEN/NOTIFY (the work wake-ups on the same channel do not), saves racing
 * from both processes on one version let exactly one through, and the table refuses what the
 * history must never hold.
 */
import { Effect, Layer, Option, Result } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { AccountStore, Ids, LedgerStore, Money, PriceStore, TaskStore } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import { dropSchemaAfter, schemaName, url } from "./TestDatabase.ts"

const T0 = new Date("2030-01-01T00:00:00.000Z")

/** Two stores ("processes") on one fresh schema, for the scope of the test. */
const twoProcesses = Effect.gen(function* () {
  const schema = schemaName()
  yield* Layer.build(dropSchemaAfter(schema))
  const first = yield* Layer.build(PgStore.layer({ url, schema, maxConnections: 4 }))
  const second = yield* Layer.build(PgStore.layer({ url, schema, maxConnections: 4 }))
  return [first, second] as const
})

const flat = (price: number) => ({ models: { "song-lyrics": { enabled: true, priceMicros: price } } })

const save = (expectedVersion: number | undefined, list: unknown) =>
  PriceStore.PriceStore.use((store) => store.save(expectedVersion, list))

/** Whether `next` completes within `ms`. */
const wokenWithin = (next: Effect.Effect<void>, ms: number) => Effect.map(Effect.timeoutOption(next, ms), Option.isSome)

/** An admission, which NOTIFYs the work wake-up on the same channel. */
const admitOne = Effect.gen(function* () {
  const accountId = Ids.makeAccountId()
  yield* AccountStore.AccountStore.use((store) => store.createAccount({ id: accountId, name: "a", createdAt: T0 }))
  yield* LedgerStore.LedgerStore.use((store) => store.grant({ accountId, amountMicros: 1_000_000, note: null }))
  const result = yield* TaskStore.TaskStore.use((store) =>
    store.admit({
      task: {
        id: Ids.makeTaskId(),
        accountId,
        apiKeyId: null,
        model: "m",
        input: {},
        priceMicros: Money.micros(1_000),
        unitMicros: Money.micros(1_000),
        quantity: 1,
        settlement: "fixed",
        createdAt: T0,
        deadlineAt: new Date(T0.getTime() + 60_000)
      },
      idempotencyKey: "k",
      fingerprint: "f",
      idempotencyExpiresAt: new Date(T0.getTime() + 60_000),
      limits: { submissionsPerMinute: 10, maxUnfinishedTasks: 10, keyUsageLimit: null }
    })
  )
  expect(result._tag).toBe("Admitted")
})

describe("price lists on PostgreSQL", () => {
  it.live("a save in one process wakes the subscribers of another; an admission does not", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const [first, second] = yield* twoProcesses
        const next = yield* PriceStore.PriceStore.use((store) => store.subscribe).pipe(Effect.provide(second))

        yield* admitOne.pipe(Effect.provide(first))
        expect(
          yield* TaskStore.TaskStore.use((store) => store.awaitWork(5_000)).pipe(
            Effect.provide(second),
            Effect.timeoutOption("5 seconds")
          )
        ).toEqual(Option.some(undefined))
        expect(yield* wokenWithin(next, 500)).toBe(false)

        yield* save(undefined, flat(1_000)).pipe(Effect.provide(first))
        expect(yield* wokenWithin(next, 5_000)).toBe(true)
        expect(yield* PriceStore.PriceStore.use((store) => store.current).pipe(Effect.provide(second))).toMatchObject({
          version: 1,
          list: flat(1_000)
        })
      })
    )
  )

  it.live("saves racing from two processes on one version let exactly one through", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const processes = yield* twoProcesses
        yield* save(undefined, flat(1)).pipe(Effect.provide(processes[0]))
        const results = yield* Effect.all(
          Array.from({ length: 20 }, (_, i) => Effect.result(save(1, flat(100 + i)).pipe(Effect.provide(processes[i % 2])))),
          { concurrency: "unbounded" }
        )
        const winners = results.flatMap((result, i) => (Result.isSuccess(result) ? [i] : []))
        expect(winners).toHaveLength(1)
        expect(results.filter((result) => Result.isFailure(result) && result.failure._tag === "PriceListConflict")).toHaveLength(
          19
        )
        expect(yield* PriceStore.PriceStore.use((store) => store.current).pipe(Effect.provide(processes[1]))).toMatchObject({
          version: 2,
          list: flat(100 + winners[0]!)
        })
      })
    )
  )

  it.live("the table keeps versions from 1, each once, each with a list", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const [first] = yield* twoProcesses
        const sql = yield* SqlClient.SqlClient.pipe(Effect.provide(first))
        const insert = (version: number, list: string | null = "{}") =>
          sql`INSERT INTO price_lists (version, list) VALUES (${version}::bigint, ${list}::jsonb)`
        const refusal = (statement: Effect.Effect<unknown, { readonly reason: { readonly _tag: string } }>) =>
          Effect.map(Effect.flip(statement), (error) => error.reason._tag)
        expect(yield* refusal(insert(0))).toBe("ConstraintError")
        expect(yield* refusal(insert(-1))).toBe("ConstraintError")
        yield* insert(1)
        expect(yield* refusal(insert(1))).toBe("UniqueViolation")
        expect(yield* refusal(insert(2, null))).toBe("ConstraintError")
      })
    )
  )
})
