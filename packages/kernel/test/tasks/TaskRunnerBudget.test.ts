/**
 * The TaskRunner and a model's daily platform budget (`dailyBudgetMicros`): refusals past it,
 * shares given back when the admission does not admit, kept when its outcome is unknown, and
 * the keyed path taking from it only for an authenticated key.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as Accounts from "../../src/accounts/Accounts.ts"
import { BudgetStore } from "../../src/pricing/BudgetStore.ts"
import * as Errors from "../../src/domain/Errors.ts"
import type * as Ids from "../../src/domain/Ids.ts"
import * as Pricer from "../../src/pricing/Pricer.ts"
import * as Scope from "../../src/accounts/Scope.ts"
import { StoreRefused, StoreUnavailable } from "../../src/domain/StoreError.ts"
import * as TaskRunner from "../../src/tasks/TaskRunner.ts"
import { TaskStore } from "../../src/tasks/TaskStore.ts"
import {
  caller,
  countingStores,
  EDIT,
  keyed,
  keyOf,
  layerWith,
  reserved,
  submission,
  TEXT_TO_IMAGE,
  UNSERVED,
  uploaded
} from "./TaskRunnerSupport.ts"

/** TEXT_TO_IMAGE's price for `submission()`. */
const PRICE = 80_000
/** A model without a budget, and an input of it. */
const UNBUDGETED = { model: "alpha-2-lite-text-to-image-economy", input: { prompt: "a lighthouse at dusk" } }

/** 20:00 UTC: four hours before the day ends. */
const EVENING = Date.parse("2030-01-01T20:00:00.000Z")
const DAY = "2030-01-01"
const NEXT_DAY = "2030-01-02"

/** Sets the clock to EVENING and gives the model a daily budget, keeping its price. */
const budgeted = (dailyBudgetMicros: number, model = TEXT_TO_IMAGE) =>
  Effect.andThen(
    TestClock.setTime(EVENING),
    Pricer.Pricer.use((pricer) => pricer.updateModel(model, (entry) => ({ ...entry, dailyBudgetMicros })))
  )

const spent = (day = DAY, model = TEXT_TO_IMAGE) => BudgetStore.use((store) => store.spent(model, day))

const lost = new StoreUnavailable({ message: "connection lost" })

/** storage-memory whose admit, take or giveBack fails as an unreachable store would while its switch is on. */
const outageStores = () => {
  const down = { admit: false, take: false, giveBack: false }
  const unless = <A>(switched: keyof typeof down, call: () => Effect.Effect<A, StoreUnavailable>) =>
    Effect.suspend(() => (down[switched] ? Effect.fail(lost) : call()))
  const stores = Layer.mergeAll(
    Layer.effect(
      TaskStore,
      Effect.map(TaskStore, (store) =>
        TaskStore.of({ ...store, admit: (request) => unless("admit", () => store.admit(request)) })
      )
    ),
    Layer.effect(
      BudgetStore,
      Effect.map(BudgetStore, (store) =>
        BudgetStore.of({
          ...store,
          take: (share) => unless("take", () => store.take(share)),
          giveBack: (share) => unless("giveBack", () => store.giveBack(share))
        })
      )
    )
  ).pipe(Layer.provideMerge(MemoryStore.layer))
  return { down, stores }
}

describe("TaskRunner and a model's daily budget", () => {
  it.effect(
    "past the budget, over all accounts, a submission is PLATFORM_BUDGET_EXCEEDED until 00:00 UTC, nothing reserved",
    () =>
      Effect.gen(function* () {
        const runner = yield* TaskRunner.TaskRunner
        yield* budgeted(2 * PRICE + PRICE / 2)
        const who = yield* caller(1_000_000)
        const other = yield* caller(1_000_000)
        yield* runner.submit(who, submission({ idempotencyKey: "a" }))
        yield* runner.submit(other, submission({ idempotencyKey: "a" }))

        const refused = yield* Effect.flip(runner.submit(who, submission({ idempotencyKey: "b" })))
        expect(refused).toBeInstanceOf(Errors.PlatformBudgetExceeded)
        expect(refused).toMatchObject({ model: TEXT_TO_IMAGE })
        expect(refused).toMatchObject({ status: 503, code: "PLATFORM_BUDGET_EXCEEDED", retryAfterSeconds: 4 * 3_600 })
        expect(refused.message).toContain(`Model ${TEXT_TO_IMAGE} is unavailable until 00:00 UTC`)
        expect(yield* reserved(who)).toBe(PRICE)
        expect((yield* runner.list(who)).tasks).toHaveLength(1)
        expect(yield* spent()).toBe(2 * PRICE)
        // A model without a budget is not held back.
        expect((yield* runner.submit(who, { ...UNBUDGETED, idempotencyKey: "c" })).replayed).toBe(false)

        yield* TestClock.adjust(`${4 * 3_600 - 1} seconds`)
        const lastSecond = yield* Effect.flip(runner.submit(who, submission({ idempotencyKey: "b" })))
        expect(lastSecond).toMatchObject({ code: "PLATFORM_BUDGET_EXCEEDED", retryAfterSeconds: 1 })
        // The refusal kept nothing under the key: at midnight it admits.
        yield* TestClock.adjust("1 second")
        expect((yield* runner.submit(who, submission({ idempotencyKey: "b" }))).replayed).toBe(false)
        expect(yield* spent(NEXT_DAY)).toBe(PRICE)
        expect(yield* spent()).toBe(2 * PRICE)
      }).pipe(Effect.provide(layerWith()))
  )

  it.effect("refusals before the store take nothing: a changed price, no executor, a foreign media reference", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      for (const model of [TEXT_TO_IMAGE, UNSERVED, EDIT]) yield* budgeted(10 * PRICE, model)
      const who = yield* caller(1_000_000)
      const foreign = yield* uploaded(yield* caller(1_000_000))
      const refusals = [
        [submission({ expectedPriceMicros: PRICE + 1 }), Errors.PriceChanged],
        [submission({ model: UNSERVED, input: { prompt: "rain" } }), Errors.ExecutionUnavailable],
        [submission({ model: EDIT, input: { prompt: "make it blue", imageUrls: [foreign] } }), Errors.InvalidModelInput]
      ] as const
      for (const [request, refusal] of refusals) {
        expect(yield* Effect.flip(runner.submit(who, request))).toBeInstanceOf(refusal)
      }
      for (const model of [TEXT_TO_IMAGE, UNSERVED, EDIT]) expect(yield* spent(DAY, model)).toBe(0)
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("a share is given back when the admission refuses, replays or conflicts", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      yield* budgeted(10 * PRICE)
      const poor = yield* caller(PRICE - 1)
      expect(yield* Effect.flip(runner.submit(poor, submission()))).toBeInstanceOf(Errors.InsufficientCredits)
      expect(yield* spent()).toBe(0)

      const who = yield* caller(1_000_000)
      const first = yield* runner.submit(who, submission())
      expect(yield* spent()).toBe(PRICE)
      expect(yield* runner.submit(who, submission())).toEqual({ task: first.task, replayed: true })
      const conflict = yield* Effect.flip(runner.submit(who, submission({ input: { prompt: "a fox" } })))
      expect(conflict).toBeInstanceOf(Errors.IdempotencyConflict)
      const busy = yield* Effect.flip(runner.submit(who, submission({ idempotencyKey: "key-2" })))
      expect(busy).toBeInstanceOf(Errors.ConcurrencyLimited)
      expect(yield* spent()).toBe(PRICE)
      expect(yield* reserved(who)).toBe(PRICE)
    }).pipe(Effect.provide(layerWith({ maxUnfinishedTasks: 1 })))
  )

  it.effect("a retry of an admitted key replays when the budget is spent; a new key is refused", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      yield* budgeted(PRICE)
      const who = yield* caller(1_000_000)
      const first = yield* runner.submit(who, submission())
      expect(yield* spent()).toBe(PRICE)

      expect(yield* runner.submit(who, submission())).toEqual({ task: first.task, replayed: true })
      const conflict = yield* Effect.flip(runner.submit(who, submission({ input: { prompt: "a fox" } })))
      expect(conflict).toBeInstanceOf(Errors.IdempotencyConflict)
      expect(yield* Effect.flip(runner.submit(who, submission({ idempotencyKey: "key-2" })))).toBeInstanceOf(
        Errors.PlatformBudgetExceeded
      )
      const other = yield* caller(1_000_000)
      expect(yield* Effect.flip(runner.submit(other, submission()))).toBeInstanceOf(Errors.PlatformBudgetExceeded)
      expect(yield* reserved(who)).toBe(PRICE)
      expect(yield* reserved(other)).toBe(0)
      expect(yield* spent()).toBe(PRICE)
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("a lowered budget applies to the next submission; a removed one admits again", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const pricer = yield* Pricer.Pricer
      yield* budgeted(10 * PRICE)
      const who = yield* caller(1_000_000)
      yield* runner.submit(who, submission({ idempotencyKey: "a" }))
      yield* budgeted(PRICE + PRICE / 2)
      expect(yield* Effect.flip(runner.submit(who, submission({ idempotencyKey: "b" })))).toBeInstanceOf(
        Errors.PlatformBudgetExceeded
      )

      yield* pricer.setModel(TEXT_TO_IMAGE, { enabled: true, priceMicros: PRICE })
      expect(yield* pricer.budgetOf(TEXT_TO_IMAGE)).toBeUndefined()
      expect((yield* runner.submit(who, submission({ idempotencyKey: "b" }))).replayed).toBe(false)
      // Without a budget nothing is counted.
      expect(yield* spent()).toBe(PRICE)
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("an admission that failed on the store keeps its share: the task may have been admitted", () => {
    const { down, stores } = outageStores()
    return Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      yield* budgeted(10 * PRICE)
      const who = yield* caller(1_000_000)
      down.admit = true
      const unknown = yield* Effect.flip(runner.submit(who, submission()))
      expect(unknown).toBeInstanceOf(Errors.ExecutionTemporarilyUnavailable)
      expect(yield* spent()).toBe(PRICE)
      expect(yield* reserved(who)).toBe(0)
      down.admit = false

      // A budget store that cannot be reached admits nothing, and says to retry with the same key.
      down.take = true
      const untaken = yield* Effect.flip(runner.submit(who, submission()))
      expect(untaken).toBeInstanceOf(Errors.ExecutionTemporarilyUnavailable)
      expect(yield* reserved(who)).toBe(0)
      down.take = false
    }).pipe(Effect.provide(layerWith({}, stores)))
  })

  it.effect("an admission the store refused for its data gives its share back: nothing was admitted", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      yield* budgeted(10 * PRICE)
      const who = yield* caller(1_000_000)
      const refused = yield* Effect.flip(runner.submit(who, submission()))
      expect(refused).toBeInstanceOf(Errors.InvalidRequest)
      expect(yield* spent()).toBe(0)
      expect(yield* reserved(who)).toBe(0)
    }).pipe(
      Effect.provide(
        layerWith(
          {},
          Layer.effect(
            TaskStore,
            Effect.map(TaskStore, (store) =>
              TaskStore.of({
                ...store,
                admit: () => Effect.die(new StoreRefused({ message: "the database refused the request's data", code: "22P05" }))
              })
            )
          ).pipe(Layer.provideMerge(MemoryStore.layer))
        )
      )
    )
  )

  it.effect("a share that cannot be given back leaves the admission's answer as it was", () => {
    const { down, stores } = outageStores()
    return Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      yield* budgeted(10 * PRICE)
      const poor = yield* caller(PRICE - 1)
      down.giveBack = true
      expect(yield* Effect.flip(runner.submit(poor, submission()))).toBeInstanceOf(Errors.InsufficientCredits)
      // Counted high, which only stops the model early.
      expect(yield* spent()).toBe(PRICE)
    }).pipe(Effect.provide(layerWith({}, stores)))
  })
})

describe("TaskRunner.submit with a presented key and a model's daily budget", () => {
  it.effect("a budgeted model authenticates first; a refused key takes nothing; other models keep the one call", () => {
    const counting = countingStores()
    return Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const runner = yield* TaskRunner.TaskRunner
      yield* budgeted(10 * PRICE)
      const { secret, caller: who } = yield* keyOf(1_000_000)
      const admitted = yield* runner.submit(keyed(secret), submission())
      expect(admitted.replayed).toBe(false)
      expect(admitted.task.accountId).toBe(who.accountId)
      expect(counting.calls).toEqual({ authenticate: 1, admitKeyed: 0, admit: 1, findIdempotent: 0 })
      expect(yield* spent()).toBe(PRICE)

      const readOnly = yield* accounts.createKey(who.accountId, { scopes: Scope.readOnly })
      const revoked = yield* accounts.createKey(who.accountId)
      yield* accounts.revokeKey(who.accountId, revoked.record.id as Ids.ApiKeyId)
      const refusals = [
        [`tm_${"a".repeat(43)}`, Errors.AuthRequired],
        [revoked.secret, Errors.PermissionDenied],
        [readOnly.secret, Errors.InsufficientScope]
      ] as const
      for (const [presented, refusal] of refusals) {
        const fresh = submission({ idempotencyKey: `key-${refusal.code}` })
        expect(yield* Effect.flip(runner.submit(keyed(presented), fresh))).toBeInstanceOf(refusal)
      }
      expect(yield* spent()).toBe(PRICE)
      expect(yield* reserved(who)).toBe(PRICE)

      yield* runner.submit(keyed(secret), { ...UNBUDGETED, idempotencyKey: "unbudgeted" })
      expect(counting.calls).toMatchObject({ admitKeyed: 1, admit: 1 })
    }).pipe(Effect.provide(layerWith({}, counting.stores)))
  })
})
