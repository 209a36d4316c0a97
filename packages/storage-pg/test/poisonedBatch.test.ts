/**
 * One request's data cannot fail another's: on the real PostgreSQL and on PGlite, admissions whose data the
 * database refuses (a NUL, an unpaired surrogate, which validation refuses before the store;
 * written here through the store directly) are sent at once with valid admissions of two
 * accounts, through both admission doors. The batches that hold them die and are rerun one by
 * one: every valid admission is admitted, every poisoned one dies alone with StoreRefused
 * (never StoreUnavailable, which would say "retry"), and the books balance.
 */
import { createHash, randomUUID } from "node:crypto"
import { Cause, Effect, Exit, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { AccountStore, Ids, LedgerStore, Money, StoreError, TaskStore } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import { closeSharedPglite, dropSchemaAfter, openSharedPglite, pgliteEmptied, schemaName, url } from "./TestDatabase.ts"

beforeAll(openSharedPglite)
afterAll(closeSharedPglite)

const PRICE = 1_000_000
const T0 = new Date("2030-01-01T00:00:00.000Z")
const PER_ACCOUNT = 14

const postgres = Layer.unwrap(
  Effect.sync(() => {
    const schema = schemaName()
    return PgStore.layer({ url, schema, maxConnections: 4 }).pipe(Layer.provideMerge(dropSchemaAfter(schema)))
  })
)

const databases = [
  { name: "PostgreSQL", stores: postgres },
  { name: "PGlite", stores: pgliteEmptied }
] as const

const fundedAccount = (credits: number) =>
  Effect.gen(function* () {
    const accounts = yield* AccountStore.AccountStore
    const account = yield* accounts.createAccount({ id: Ids.makeAccountId(), name: "poison", createdAt: T0 })
    yield* LedgerStore.LedgerStore.use((store) => store.grant({ accountId: account.id, amountMicros: credits, note: "top-up" }))
    const secret = `tm_${randomUUID()}`
    const hash = createHash("sha256").update(secret).digest("hex")
    yield* accounts.insertApiKey({
      id: Ids.makeApiKeyId(),
      accountId: account.id,
      name: "key",
      displayPrefix: "tm_x",
      hash,
      scopes: ["jobs:create"],
      createdAt: T0,
      revokedAt: null,
      rateLimitPerMinute: 1_000_000,
      usageLimit: null,
      usageCount: 0
    })
    return { accountId: account.id, hash }
  })

/** What makes an admission poisoned: its input, or its Idempotency-Key. */
const poisons = [
  { input: { prompt: "a\u0000b" } },
  { input: { prompt: "\ud800" } },
  { input: { nested: [{ ["k\u0000"]: 1 }] } },
  { idempotencyKey: "key\u0000" }
] as const

const admission = (poison: (typeof poisons)[number] | undefined) => {
  const task = {
    id: Ids.makeTaskId(),
    model: "song-lyrics",
    input: poison !== undefined && "input" in poison ? poison.input : { prompt: "a fox" },
    priceMicros: Money.micros(PRICE),
    unitMicros: Money.micros(PRICE),
    quantity: 1,
    settlement: "fixed" as const,
    createdAt: T0,
    deadlineAt: new Date(T0.getTime() + 3_600_000)
  }
  return {
    task,
    idempotencyKey: poison !== undefined && "idempotencyKey" in poison ? poison.idempotencyKey : `key-${task.id}`,
    fingerprint: `fp-${task.id}`,
    idempotencyExpiresAt: new Date(T0.getTime() + 86_400_000),
    limits: { submissionsPerMinute: 1_000_000, maxUnfinishedTasks: 1_000_000 }
  }
}

type Outcome = "Admitted" | "StoreRefused" | string

const outcomeOf = (exit: Exit.Exit<TaskStore.AdmissionResult | undefined, StoreError.StoreUnavailable>): Outcome => {
  if (Exit.isSuccess(exit)) return exit.value?._tag ?? "no admission"
  if (StoreError.refusalOf(exit.cause) !== undefined) return "StoreRefused"
  return Cause.pretty(exit.cause)
}

const checkBooks = (accountId: Ids.AccountId, admitted: number, credits: number) =>
  Effect.gen(function* () {
    const ledger = yield* LedgerStore.LedgerStore
    const balances = yield* ledger.balances(accountId)
    expect(balances).toEqual({
      balanceMicros: credits,
      reservedMicros: admitted * PRICE,
      availableMicros: credits - admitted * PRICE,
      paymentReview: false
    })
    const entries = (yield* ledger.entries(accountId, { limit: 1000 }))!.entries
    expect(entries.filter((entry) => entry.kind === "reserve").length).toBe(admitted)
    const tasks = yield* TaskStore.TaskStore.use((store) => store.list(accountId, 1000))
    expect(tasks.length).toBe(admitted)
    expect(tasks.every((task) => (task.input as { prompt?: string }).prompt === "a fox")).toBe(true)
    expect(yield* ledger.audit).toEqual([])
  })

for (const { name, stores } of databases)
  describe(`storage-pg: a batch with refused data (${name})`, () => {
    it.live("admit: every valid admission of two accounts is admitted, every poisoned one refused alone", () =>
      Effect.gen(function* () {
        const credits = 100 * PRICE
        const accounts = yield* Effect.all([fundedAccount(credits), fundedAccount(credits)])
        const store = yield* TaskStore.TaskStore
        const requests = accounts.flatMap(({ accountId }) =>
          Array.from({ length: 2 * PER_ACCOUNT }, (_, i) => {
            const base = admission(i % 2 === 0 ? undefined : poisons[(i >> 1) % poisons.length])
            return {
              poisoned: i % 2 === 1,
              request: {
                ...base,
                task: { ...base.task, accountId, apiKeyId: null },
                limits: { ...base.limits, keyUsageLimit: null }
              }
            }
          })
        )
        const exits = yield* Effect.all(
          requests.map(({ request }) => Effect.exit(store.admit(request))),
          { concurrency: "unbounded" }
        )
        const outcomes = exits.map(outcomeOf)
        expect(outcomes.filter((_, i) => !requests[i]!.poisoned)).toEqual(Array(2 * PER_ACCOUNT).fill("Admitted"))
        expect(outcomes.filter((_, i) => requests[i]!.poisoned)).toEqual(Array(2 * PER_ACCOUNT).fill("StoreRefused"))
        for (const { accountId } of accounts) yield* checkBooks(accountId, PER_ACCOUNT, credits)
      }).pipe(Effect.provide(stores))
    )

    it.live("admit: the same for requests of a key", () =>
      Effect.gen(function* () {
        const credits = 100 * PRICE
        const accounts = yield* Effect.all([fundedAccount(credits), fundedAccount(credits)])
        const store = yield* TaskStore.TaskStore
        const requests = accounts.flatMap(({ hash }) =>
          Array.from({ length: 2 * PER_ACCOUNT }, (_, i) => ({
            poisoned: i % 2 === 1,
            request: {
              ...admission(i % 2 === 0 ? undefined : poisons[(i >> 1) % poisons.length]),
              key: { hash, now: T0, scope: "jobs:create" as const, defaultRateLimitPerMinute: 1_000_000 }
            }
          }))
        )
        const exits = yield* Effect.all(
          requests.map(({ request }) => Effect.exit(Effect.map(store.admit(request), (keyed) => keyed.admission))),
          { concurrency: "unbounded" }
        )
        const outcomes = exits.map(outcomeOf)
        expect(outcomes.filter((_, i) => !requests[i]!.poisoned)).toEqual(Array(2 * PER_ACCOUNT).fill("Admitted"))
        expect(outcomes.filter((_, i) => requests[i]!.poisoned)).toEqual(Array(2 * PER_ACCOUNT).fill("StoreRefused"))
        for (const { accountId } of accounts) yield* checkBooks(accountId, PER_ACCOUNT, credits)
      }).pipe(Effect.provide(stores))
    )
  })
