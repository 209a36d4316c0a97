import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as Accounts from "../../src/accounts/Accounts.ts"
import * as Errors from "../../src/domain/Errors.ts"
import * as Fingerprint from "../../src/domain/Fingerprint.ts"
import * as Ids from "../../src/domain/Ids.ts"
import * as Ledger from "../../src/ledger/Ledger.ts"
import * as MediaReference from "../../src/media/MediaReference.ts"
import { micros } from "../../src/domain/Money.ts"
import * as Pricer from "../../src/pricing/Pricer.ts"
import * as Scope from "../../src/accounts/Scope.ts"
import { StoreRefused, StoreUnavailable } from "../../src/domain/StoreError.ts"
import * as TaskRunner from "../../src/tasks/TaskRunner.ts"
import { isKeyed, TaskStore } from "../../src/tasks/TaskStore.ts"
import type { AnyAdmissionRequest } from "../../src/tasks/TaskStore.ts"
import {
  caller,
  countingCatalog,
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

describe("TaskRunner.submit", () => {
  it.effect("admits a queued task at the quoted price, with defaults applied", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(1_000_000)
      yield* TestClock.adjust("10 seconds")
      const { task, replayed } = yield* runner.submit(who, submission({ expectedPriceMicros: 80_000 }))
      expect(replayed).toBe(false)
      expect(task).toMatchObject({
        accountId: who.accountId,
        apiKeyId: who.apiKeyId,
        model: TEXT_TO_IMAGE,
        input: { prompt: "a lighthouse at dusk", aspectRatio: "9:16", resolution: "1k" },
        status: "queued",
        priceMicros: 80_000,
        settlement: "fixed",
        createdAt: new Date(10_000),
        deadlineAt: new Date(10_000 + 15 * 60_000)
      })
      expect(yield* reserved(who)).toBe(80_000)
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("a model's own deadline replaces its category's", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(1_000_000)
      yield* TestClock.adjust("10 seconds")
      const { task } = yield* runner.submit(who, submission())
      expect(task.deadlineAt).toEqual(new Date(10_000 + 90_000))
      const other = yield* runner.submit(
        who,
        submission({ model: EDIT, idempotencyKey: "key-2", input: { prompt: "x", imageUrls: ["https://example.com/a.png"] } })
      )
      expect(other.task.deadlineAt).toEqual(new Date(10_000 + 15 * 60_000))
    }).pipe(Effect.provide(layerWith({ modelDeadlines: { [TEXT_TO_IMAGE]: "90 seconds" } })))
  )

  it.effect("a retry with the same key and request replays, spelled-out defaults included", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(1_000_000)
      const first = yield* runner.submit(who, submission())
      const again = yield* runner.submit(
        who,
        submission({
          input: { resolution: "1k", aspectRatio: "9:16", prompt: "a lighthouse at dusk" }
        })
      )
      expect(again).toEqual({ task: first.task, replayed: true })
      expect(yield* reserved(who)).toBe(80_000)

      const conflict = yield* Effect.flip(runner.submit(who, submission({ input: { prompt: "a fox" } })))
      expect(conflict).toBeInstanceOf(Errors.IdempotencyConflict)
      const priced = yield* Effect.flip(runner.submit(who, submission({ expectedPriceMicros: 80_000 })))
      expect(priced).toBeInstanceOf(Errors.IdempotencyConflict)
      expect(yield* reserved(who)).toBe(80_000)
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("keys are kept for the configured time, then admit anew", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(1_000_000)
      const first = yield* runner.submit(who, submission())
      yield* TestClock.adjust("59 minutes")
      expect((yield* runner.submit(who, submission())).replayed).toBe(true)
      yield* TestClock.adjust("1 minute")
      const later = yield* runner.submit(who, submission())
      expect(later.replayed).toBe(false)
      expect(later.task.id).not.toBe(first.task.id)
    }).pipe(Effect.provide(layerWith({ idempotencyTtl: "1 hour" })))
  )

  it.effect("refusals before admission reserve nothing and keep nothing under the key", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(50_000)
      const changed = yield* Effect.flip(runner.submit(who, submission({ expectedPriceMicros: 70_000 })))
      expect(changed).toBeInstanceOf(Errors.PriceChanged)
      const invalid = yield* Effect.flip(runner.submit(who, submission({ input: { prompt: "" } })))
      expect(invalid).toBeInstanceOf(Errors.InvalidModelInput)
      expect(yield* Effect.flip(runner.submit(who, submission({ model: "no-such-model" })))).toBeInstanceOf(Errors.ModelNotFound)
      const unserved = yield* Effect.flip(runner.submit(who, submission({ model: UNSERVED, input: { prompt: "rain" } })))
      expect(unserved).toBeInstanceOf(Errors.ExecutionUnavailable)
      const poor = yield* Effect.flip(runner.submit(who, submission()))
      expect(poor).toBeInstanceOf(Errors.InsufficientCredits)
      expect(poor.message).toContain("50000 micros")
      expect(poor.message).toContain("80000 micros")
      expect(yield* reserved(who)).toBe(0)

      yield* Ledger.Ledger.use((ledger) => ledger.grant(who.accountId, micros(30_000)))
      const admitted = yield* runner.submit(who, submission({ expectedPriceMicros: 80_000 }))
      expect(admitted.replayed).toBe(false)
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("refusals carry what the caller of the kernel branches on: the model, the problems, both amounts", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(50_000)
      const changed = yield* Effect.flip(runner.submit(who, submission({ expectedPriceMicros: 70_000 })))
      expect(changed).toBeInstanceOf(Errors.PriceChanged)
      expect(changed).toMatchObject({ model: TEXT_TO_IMAGE, expectedPriceMicros: 70_000, priceMicros: 80_000 })
      const invalid = yield* Effect.flip(runner.submit(who, submission({ input: { prompt: "" } })))
      expect(invalid).toBeInstanceOf(Errors.InvalidModelInput)
      expect(invalid).toMatchObject({ model: TEXT_TO_IMAGE, problems: [invalid.message] })
      const missing = yield* Effect.flip(runner.submit(who, submission({ model: "no-such-model" })))
      expect(missing).toBeInstanceOf(Errors.ModelNotFound)
      expect(missing).toMatchObject({ model: "no-such-model" })
      const poor = yield* Effect.flip(runner.submit(who, submission()))
      expect(poor).toBeInstanceOf(Errors.InsufficientCredits)
      expect(poor).toMatchObject({ requiredMicros: 80_000, availableMicros: 50_000 })
      yield* (yield* Pricer.Pricer).disable(TEXT_TO_IMAGE)
      const disabled = yield* Effect.flip(runner.submit(who, submission()))
      expect(disabled).toBeInstanceOf(Errors.ModelPriceUnavailable)
      expect(disabled).toMatchObject({ model: TEXT_TO_IMAGE })
      // The wire carries none of them: `{ code, error }` only.
      expect(Errors.errorBody(changed)).toEqual({ code: "PRICE_CHANGED", error: changed.message })
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("a retry after the price changed replays; another input conflicts; a new key is PRICE_CHANGED", () => {
    const counting = countingStores()
    return Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const pricer = yield* Pricer.Pricer
      const who = yield* caller(1_000_000)
      const request = submission({ expectedPriceMicros: 80_000 })
      const first = yield* runner.submit(who, request)
      // An admission is one store call; only refusals look the key up.
      expect(counting.calls).toMatchObject({ admit: 1, findIdempotent: 0 })

      yield* pricer.setModel(TEXT_TO_IMAGE, { enabled: true, priceMicros: 90_000 })
      yield* TestClock.adjust("1 minute")
      expect(yield* runner.submit(who, request)).toEqual({ task: first.task, replayed: true })
      expect(counting.calls).toMatchObject({ admit: 1, findIdempotent: 1 })
      expect(yield* reserved(who)).toBe(80_000)

      const conflict = yield* Effect.flip(runner.submit(who, { ...request, input: { prompt: "a fox" } }))
      expect(conflict).toBeInstanceOf(Errors.IdempotencyConflict)
      expect(conflict.message).toContain(first.task.id)

      const fresh = yield* Effect.flip(runner.submit(who, { ...request, idempotencyKey: "key-2" }))
      expect(fresh).toBeInstanceOf(Errors.PriceChanged)
      // Keys belong to one account: another account's same key and request finds nothing to replay.
      const other = yield* caller(1_000_000)
      expect(yield* Effect.flip(runner.submit(other, request))).toBeInstanceOf(Errors.PriceChanged)

      expect(yield* reserved(who)).toBe(80_000)
      expect((yield* runner.list(who)).tasks.map((task) => task.id)).toEqual([first.task.id])
    }).pipe(Effect.provide(layerWith({}, counting.stores)))
  })

  it.effect("a retry after the model lost its executor or was disabled replays; a new key is refused", () => {
    const served = new Set([TEXT_TO_IMAGE])
    return Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const pricer = yield* Pricer.Pricer
      const who = yield* caller(1_000_000)
      const first = yield* runner.submit(who, submission())

      served.delete(TEXT_TO_IMAGE)
      expect(yield* runner.submit(who, submission())).toEqual({ task: first.task, replayed: true })
      const unserved = yield* Effect.flip(runner.submit(who, submission({ idempotencyKey: "key-2" })))
      expect(unserved).toBeInstanceOf(Errors.ExecutionUnavailable)

      served.add(TEXT_TO_IMAGE)
      yield* pricer.disable(TEXT_TO_IMAGE)
      expect(yield* runner.submit(who, submission())).toEqual({ task: first.task, replayed: true })
      const disabled = yield* Effect.flip(runner.submit(who, submission({ idempotencyKey: "key-2" })))
      expect(disabled).toBeInstanceOf(Errors.ModelPriceUnavailable)
      expect(yield* reserved(who)).toBe(80_000)
    }).pipe(Effect.provide(layerWith({ executorAvailable: (model) => served.has(model) })))
  })

  it.effect("an expired key replays nothing: the refusal stands", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(1_000_000)
      const request = submission({ expectedPriceMicros: 80_000 })
      yield* runner.submit(who, request)
      yield* (yield* Pricer.Pricer).setModel(TEXT_TO_IMAGE, { enabled: true, priceMicros: 90_000 })
      yield* TestClock.adjust("1 hour")
      expect(yield* Effect.flip(runner.submit(who, request))).toBeInstanceOf(Errors.PriceChanged)
    }).pipe(Effect.provide(layerWith({ idempotencyTtl: "1 hour" })))
  )

  it.effect("media references must be the caller's, and a foreign one reads as missing", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(1_000_000)
      const other = yield* caller(1_000_000)
      const own = yield* uploaded(who)
      const foreign = yield* uploaded(other)
      const missing = MediaReference.make()
      const edit = (imageUrls: ReadonlyArray<string>, idempotencyKey: string) =>
        runner.submit(who, { model: EDIT, input: { prompt: "make it blue", imageUrls }, idempotencyKey })

      const foreignError = yield* Effect.flip(edit([own, foreign], "k1"))
      const missingError = yield* Effect.flip(edit([own, missing], "k2"))
      expect(foreignError).toBeInstanceOf(Errors.InvalidModelInput)
      expect(foreignError.message).toMatch(/^input\.imageUrls\[1\]: media:/)
      expect(foreignError.message.replace(foreign, "REF")).toBe(missingError.message.replace(missing, "REF"))
      expect(foreignError).toMatchObject({ model: EDIT, problems: [foreignError.message] })
      expect(yield* reserved(who)).toBe(0)

      expect((yield* edit([own, "https://example.com/a.png"], "k3")).task.status).toBe("queued")
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("limits map to their errors with Retry-After", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(10_000_000)
      yield* runner.submit(who, submission({ idempotencyKey: "a" }))
      yield* runner.submit(who, submission({ idempotencyKey: "b" }))
      const busy = yield* Effect.flip(runner.submit(who, submission({ idempotencyKey: "c" })))
      expect(busy).toBeInstanceOf(Errors.ConcurrencyLimited)
      expect(busy).toMatchObject({ retryAfterSeconds: 5 })
    }).pipe(Effect.provide(layerWith({ maxUnfinishedTasks: 2 })))
  )

  it.effect("submissions per minute are limited", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(10_000_000)
      yield* runner.submit(who, submission({ idempotencyKey: "a" }))
      yield* TestClock.adjust("15 seconds")
      const limited = yield* Effect.flip(runner.submit(who, submission({ idempotencyKey: "b" })))
      expect(limited).toBeInstanceOf(Errors.RateLimited)
      expect(limited).toMatchObject({ retryAfterSeconds: 45 })
    }).pipe(Effect.provide(layerWith({ submissionsPerMinute: 1 })))
  )

  it.effect("a key's usage limit is API_KEY_USAGE_EXCEEDED", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(10_000_000, { usageLimit: 1 })
      yield* runner.submit(who, submission({ idempotencyKey: "a" }))
      const exceeded = yield* Effect.flip(runner.submit(who, submission({ idempotencyKey: "b" })))
      expect(exceeded).toBeInstanceOf(Errors.ApiKeyUsageExceeded)
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("an account in payment review cannot submit", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(100_000)
      yield* Ledger.Ledger.use((ledger) => ledger.refund(who.accountId, micros(200_000)))
      const review = yield* Effect.flip(runner.submit(who, submission()))
      expect(review).toBeInstanceOf(Errors.PaymentReviewRequired)
    }).pipe(Effect.provide(layerWith()))
  )
})

describe("TaskRunner.submit with a presented key", () => {
  it.effect("admits in one store call under the key's account and answers its caller", () => {
    const counting = countingStores()
    return Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const { secret, caller: who } = yield* keyOf(1_000_000, { usageLimit: 5 })
      yield* TestClock.adjust("10 seconds")
      const first = yield* runner.submit(keyed(secret), submission({ expectedPriceMicros: 80_000 }))
      expect(first.replayed).toBe(false)
      expect(first.task).toMatchObject({
        accountId: who.accountId,
        apiKeyId: who.apiKeyId,
        model: TEXT_TO_IMAGE,
        input: { prompt: "a lighthouse at dusk", aspectRatio: "9:16", resolution: "1k" },
        status: "queued",
        priceMicros: 80_000,
        createdAt: new Date(10_000),
        deadlineAt: new Date(10_000 + 15 * 60_000)
      })
      expect(yield* runner.get(who, first.task.id)).toEqual(first.task)
      expect(yield* reserved(who)).toBe(80_000)
      expect(counting.calls).toEqual({ authenticate: 0, admitKeyed: 1, admit: 0, findIdempotent: 0 })

      const again = yield* runner.submit(
        keyed(secret),
        submission({
          input: { resolution: "1k", aspectRatio: "9:16", prompt: "a lighthouse at dusk" },
          expectedPriceMicros: 80_000
        })
      )
      expect(again).toEqual({ task: first.task, replayed: true })
      const conflict = yield* Effect.flip(runner.submit(keyed(secret), submission({ input: { prompt: "a fox" } })))
      expect(conflict).toBeInstanceOf(Errors.IdempotencyConflict)
      expect(conflict.message).toContain(first.task.id)
      expect(counting.calls).toEqual({ authenticate: 0, admitKeyed: 3, admit: 0, findIdempotent: 0 })
      expect(yield* reserved(who)).toBe(80_000)
    }).pipe(Effect.provide(layerWith({}, counting.stores)))
  })

  it.effect("validates a submission once on every path: one call, a refusal a replay may answer, media, invalid input", () => {
    const counting = countingCatalog()
    return Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const { secret, caller: who } = yield* keyOf(1_000_000)
      const own = yield* uploaded(who)
      const submissions = [
        [submission({ idempotencyKey: "a" }), undefined],
        [submission({ idempotencyKey: "b", expectedPriceMicros: 1 }), Errors.PriceChanged],
        [{ model: EDIT, input: { prompt: "make it blue", imageUrls: [own] }, idempotencyKey: "c" }, undefined],
        [submission({ idempotencyKey: "d", input: { prompt: "" } }), Errors.InvalidModelInput]
      ] as const
      for (const [request, refusal] of submissions) {
        const before = counting.calls.validate
        const answer = yield* Effect.result(runner.submit(keyed(secret), request))
        if (refusal === undefined) expect(answer._tag).toBe("Success")
        else expect(answer._tag === "Failure" && answer.failure).toBeInstanceOf(refusal)
        expect(counting.calls.validate - before, request.idempotencyKey).toBe(1)
      }
    }).pipe(Effect.provide(layerWith({}, MemoryStore.layer, counting.catalog)))
  })

  it.effect("unknown and malformed keys are AUTH_REQUIRED on either path; malformed ones never reach the store", () => {
    const counting = countingStores()
    return Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const { caller: who } = yield* keyOf(1_000_000)
      const unknown = `tm_${"a".repeat(43)}`
      for (const presented of ["", "tm_short", `sk_${"a".repeat(43)}`, unknown]) {
        for (const request of [submission(), submission({ input: { prompt: "" } })]) {
          expect(yield* Effect.flip(runner.submit(keyed(presented), request))).toBeInstanceOf(Errors.AuthRequired)
        }
      }
      expect(counting.calls).toEqual({ authenticate: 1, admitKeyed: 1, admit: 0, findIdempotent: 0 })
      expect(yield* reserved(who)).toBe(0)
    }).pipe(Effect.provide(layerWith({}, counting.stores)))
  })

  it.effect("a revoked key is PERMISSION_DENIED ahead of input errors and replays", () =>
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const runner = yield* TaskRunner.TaskRunner
      const { secret, caller: who } = yield* keyOf(1_000_000)
      yield* runner.submit(keyed(secret), submission())
      yield* accounts.revokeKey(who.accountId, who.apiKeyId as Ids.ApiKeyId)
      for (const request of [submission(), submission({ input: { prompt: "" } }), submission({ model: "no-such-model" })]) {
        const denied = yield* Effect.flip(runner.submit(keyed(secret), request))
        expect(denied).toBeInstanceOf(Errors.PermissionDenied)
        expect(denied.message).toMatch(/revoked/)
      }
      expect(yield* reserved(who)).toBe(80_000)
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("a key over its rate is API_KEY_RATE_LIMITED on either path, both counted in one window", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const { secret, caller: who } = yield* keyOf(1_000_000, { rateLimitPerMinute: 2 })
      yield* runner.submit(keyed(secret), submission({ idempotencyKey: "a" }))
      yield* TestClock.adjust("20 seconds")
      const invalid = submission({ idempotencyKey: "b", input: { prompt: "" } })
      expect(yield* Effect.flip(runner.submit(keyed(secret), invalid))).toBeInstanceOf(Errors.InvalidModelInput)
      for (const request of [submission({ idempotencyKey: "b" }), invalid]) {
        const limited = yield* Effect.flip(runner.submit(keyed(secret), request))
        expect(limited).toBeInstanceOf(Errors.ApiKeyRateLimited)
        expect(limited).toMatchObject({ retryAfterSeconds: 40 })
      }
      expect(yield* reserved(who)).toBe(80_000)

      yield* TestClock.adjust("40 seconds")
      expect((yield* runner.submit(keyed(secret), submission({ idempotencyKey: "b" }))).replayed).toBe(false)
      expect(yield* reserved(who)).toBe(160_000)
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("a key without jobs:create is INSUFFICIENT_SCOPE on either path, after the reasons that come first", () =>
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const runner = yield* TaskRunner.TaskRunner
      const { secret, caller: who } = yield* keyOf(1_000_000, { scopes: Scope.readOnly })
      for (const request of [submission(), submission({ input: { prompt: "" } })]) {
        const refused = yield* Effect.flip(runner.submit(keyed(secret), request))
        expect(refused).toBeInstanceOf(Errors.InsufficientScope)
        expect(refused.message).toContain("jobs:create")
      }
      expect((yield* runner.list(who)).tasks).toEqual([])

      yield* accounts.revokeKey(who.accountId, who.apiKeyId as Ids.ApiKeyId)
      expect(yield* Effect.flip(runner.submit(keyed(secret), submission()))).toBeInstanceOf(Errors.PermissionDenied)
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("with a good key, input errors are submit's", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const { secret, caller: who } = yield* keyOf(1_000_000)
      const refusals = [
        [submission({ input: { prompt: "" } }), Errors.InvalidModelInput],
        [submission({ model: "no-such-model" }), Errors.ModelNotFound],
        [submission({ model: UNSERVED, input: { prompt: "rain" } }), Errors.ExecutionUnavailable],
        [submission({ expectedPriceMicros: 70_000 }), Errors.PriceChanged]
      ] as const
      for (const [request, refusal] of refusals) {
        expect(yield* Effect.flip(runner.submit(keyed(secret), request))).toBeInstanceOf(refusal)
      }
      expect(yield* reserved(who)).toBe(0)
      // None of them kept the Idempotency-Key.
      expect((yield* runner.submit(keyed(secret), submission())).replayed).toBe(false)
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("a submission with media references takes authenticate then admit; a foreign one is INVALID_MODEL_INPUT", () => {
    const counting = countingStores()
    return Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const { secret, caller: who } = yield* keyOf(1_000_000)
      const { caller: other } = yield* keyOf(1_000_000)
      const own = yield* uploaded(who)
      const foreign = yield* uploaded(other)
      const edit = (imageUrls: ReadonlyArray<string>, idempotencyKey: string) =>
        runner.submit(keyed(secret), { model: EDIT, input: { prompt: "make it blue", imageUrls }, idempotencyKey })

      const refused = yield* Effect.flip(edit([own, foreign], "k1"))
      expect(refused).toBeInstanceOf(Errors.InvalidModelInput)
      expect(refused.message).toMatch(/^input\.imageUrls\[1\]: media:/)
      expect(counting.calls).toEqual({ authenticate: 1, admitKeyed: 0, admit: 0, findIdempotent: 1 })
      expect(yield* reserved(who)).toBe(0)

      const admitted = yield* edit([own], "k2")
      expect(admitted.task).toMatchObject({ accountId: who.accountId, apiKeyId: who.apiKeyId, status: "queued" })
      expect(counting.calls).toEqual({ authenticate: 2, admitKeyed: 0, admit: 1, findIdempotent: 1 })
    }).pipe(Effect.provide(layerWith({}, counting.stores)))
  })

  it.effect("a retry after the price changed replays through authenticate and submit; a new key is PRICE_CHANGED", () => {
    const counting = countingStores()
    return Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const pricer = yield* Pricer.Pricer
      const { secret, caller: who } = yield* keyOf(1_000_000)
      const request = submission({ expectedPriceMicros: 80_000 })
      const first = yield* runner.submit(keyed(secret), request)

      yield* pricer.setModel(TEXT_TO_IMAGE, { enabled: true, priceMicros: 90_000 })
      yield* TestClock.adjust("1 minute")
      expect(yield* runner.submit(keyed(secret), request)).toEqual({ task: first.task, replayed: true })
      expect(counting.calls).toEqual({ authenticate: 1, admitKeyed: 1, admit: 0, findIdempotent: 1 })
      const conflict = yield* Effect.flip(runner.submit(keyed(secret), { ...request, input: { prompt: "a fox" } }))
      expect(conflict).toBeInstanceOf(Errors.IdempotencyConflict)
      const fresh = yield* Effect.flip(runner.submit(keyed(secret), { ...request, idempotencyKey: "key-2" }))
      expect(fresh).toBeInstanceOf(Errors.PriceChanged)
      expect(yield* reserved(who)).toBe(80_000)
    }).pipe(Effect.provide(layerWith({}, counting.stores)))
  })

  it.effect("admission refusals come through the one call as submit answers them", () =>
    Effect.gen(function* () {
      const accounts = yield* Accounts.Accounts
      const runner = yield* TaskRunner.TaskRunner
      const { secret, caller: who } = yield* keyOf(100_000, { usageLimit: 1 })
      yield* runner.submit(keyed(secret), submission({ idempotencyKey: "a" }))
      const exceeded = yield* Effect.flip(runner.submit(keyed(secret), submission({ idempotencyKey: "b" })))
      expect(exceeded).toBeInstanceOf(Errors.ApiKeyUsageExceeded)
      expect(exceeded.message).toContain("usage limit of 1 ")

      const unlimited = yield* accounts.createKey(who.accountId)
      const poor = yield* Effect.flip(runner.submit(keyed(unlimited.secret), submission({ idempotencyKey: "b" })))
      expect(poor).toBeInstanceOf(Errors.InsufficientCredits)
      expect(poor.message).toContain("20000 micros")
      expect(poor.message).toContain("80000 micros")

      yield* Ledger.Ledger.use((ledger) => ledger.grant(who.accountId, micros(1_000_000)))
      yield* runner.submit(keyed(unlimited.secret), submission({ idempotencyKey: "b" }))
      yield* TestClock.adjust("15 seconds")
      const limited = yield* Effect.flip(runner.submit(keyed(unlimited.secret), submission({ idempotencyKey: "c" })))
      expect(limited).toBeInstanceOf(Errors.RateLimited)
      expect(limited).toMatchObject({ retryAfterSeconds: 45 })
      expect(yield* reserved(who)).toBe(160_000)
    }).pipe(Effect.provide(layerWith({ submissionsPerMinute: 2 })))
  )

  it.effect("a store outage in the one call is EXECUTION_TEMPORARILY_UNAVAILABLE, to retry with the same key", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const { secret, caller: who } = yield* keyOf(1_000_000)
      const refused = yield* Effect.flip(runner.submit(keyed(secret), submission()))
      expect(refused).toBeInstanceOf(Errors.ExecutionTemporarilyUnavailable)
      expect(refused).toMatchObject({ retryAfterSeconds: 1, message: expect.stringContaining("same Idempotency-Key") })
      expect(yield* reserved(who)).toBe(0)
    }).pipe(Effect.provide(layerWith({}, storeFailing("admitKeyed", "before"))))
  )

  it.effect("an admission whose answer was lost replays on the retry with the same key, reserved once", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const { secret, caller: who } = yield* keyOf(1_000_000)
      expect(yield* Effect.flip(runner.submit(keyed(secret), submission()))).toBeInstanceOf(
        Errors.ExecutionTemporarilyUnavailable
      )
      const price = yield* reserved(who)
      expect(price).toBeGreaterThan(0)
      failing = false
      const retry = yield* runner.submit(keyed(secret), submission())
      expect(retry.replayed).toBe(true)
      expect(yield* reserved(who)).toBe(price)
      expect((yield* runner.list(who)).tasks).toHaveLength(1)
    }).pipe(Effect.provide(layerWith({}, storeFailing("admitKeyed", "after"))))
  )

  it.effect("a store outage admitting after the key was judged (media references) is EXECUTION_TEMPORARILY_UNAVAILABLE", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const { secret, caller: who } = yield* keyOf(1_000_000)
      const reference = yield* uploaded(who)
      const refused = yield* Effect.flip(
        runner.submit(
          keyed(secret),
          submission({
            model: EDIT,
            input: { prompt: "make it blue", imageUrls: [reference] }
          })
        )
      )
      expect(refused).toBeInstanceOf(Errors.ExecutionTemporarilyUnavailable)
      expect(yield* reserved(who)).toBe(0)
    }).pipe(Effect.provide(layerWith({}, storeFailing("admit", "before"))))
  )

  it.effect("a string the store cannot hold is INVALID_MODEL_INPUT naming it, and nothing is stored", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const { secret, caller: who } = yield* keyOf(1_000_000)
      for (const prompt of ["a\u0000b", "\ud800", "x\udc00"]) {
        const refused = yield* Effect.flip(runner.submit(keyed(secret), submission({ input: { prompt } })))
        expect(refused).toBeInstanceOf(Errors.InvalidModelInput)
        expect(refused.message).toMatch(/^input\.prompt: contains (U\+0000 \(NUL\)|an unpaired surrogate)/)
        expect(yield* Effect.flip(runner.submit(who, submission({ input: { prompt } })))).toBeInstanceOf(Errors.InvalidModelInput)
      }
      expect((yield* runner.list(who)).tasks).toEqual([])
      expect(yield* reserved(who)).toBe(0)
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("a write the store refuses for its data is INVALID_REQUEST, never a retry, in the one call", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const { secret, caller: who } = yield* keyOf(1_000_000)
      const refused = yield* Effect.flip(runner.submit(keyed(secret), submission()))
      expect(refused).toBeInstanceOf(Errors.InvalidRequest)
      expect(refused).toMatchObject({ status: 400, message: expect.stringContaining("could not be stored") })
      expect(refused.retryAfterSeconds).toBeUndefined()
      expect(yield* reserved(who)).toBe(0)
      // The refused statement judged no key: a refused key is still answered first.
      const unknown = yield* Effect.flip(runner.submit(keyed(`tm_${"x".repeat(43)}`), submission()))
      expect(unknown).toBeInstanceOf(Errors.AuthRequired)
      const { secret: readOnly } = yield* keyOf(1_000_000, { scopes: ["jobs:read"] })
      expect(yield* Effect.flip(runner.submit(keyed(readOnly), submission()))).toBeInstanceOf(Errors.InsufficientScope)
    }).pipe(Effect.provide(layerWith({}, storeRefusing("admitKeyed"))))
  )

  it.effect("a write the store refuses for its data is INVALID_REQUEST after the key was judged too", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const { secret, caller: who } = yield* keyOf(1_000_000)
      const reference = yield* uploaded(who)
      const withMedia = submission({ model: EDIT, input: { prompt: "make it blue", imageUrls: [reference] } })
      expect(yield* Effect.flip(runner.submit(keyed(secret), withMedia))).toBeInstanceOf(Errors.InvalidRequest)
      expect(yield* Effect.flip(runner.submit(who, submission()))).toBeInstanceOf(Errors.InvalidRequest)
      expect(yield* reserved(who)).toBe(0)
    }).pipe(Effect.provide(layerWith({}, storeRefusing("admit"))))
  )
})

/** Which admissions a store double affects: a caller's (`admit`) or a key's (`admitKeyed`). */
type Door = "admit" | "admitKeyed"

const affects = (door: Door, request: AnyAdmissionRequest) => isKeyed(request) === (door === "admitKeyed")

/** storage-memory whose `door` dies as storage-pg's does when the database refuses the data. */
const storeRefusing = (door: Door) =>
  Layer.effect(
    TaskStore,
    Effect.map(TaskStore, (store) => {
      const refused = Effect.die(new StoreRefused({ message: "the database refused the request's data", code: "22P05" }))
      return TaskStore.of({ ...store, admit: (request) => (affects(door, request) ? refused : store.admit(request)) })
    })
  ).pipe(Layer.provideMerge(MemoryStore.layer))

/** Set to false to let the store answer again. */
let failing = true

/**
 * storage-memory whose `door` fails as a lost connection would: before the store did
 * anything, or after it committed (the answer lost on the way back).
 */
const storeFailing = (door: Door, when: "before" | "after") => {
  failing = true
  const lost = new StoreUnavailable({ message: "connection lost" })
  return Layer.effect(
    TaskStore,
    Effect.map(TaskStore, (store) => {
      const fail = <B>(call: Effect.Effect<B, StoreUnavailable>): Effect.Effect<B, StoreUnavailable> =>
        !failing ? call : when === "before" ? Effect.fail(lost) : Effect.andThen(call, Effect.fail(lost))
      return TaskStore.of({
        ...store,
        admit: (request) => (affects(door, request) ? fail(store.admit(request)) : store.admit(request))
      })
    })
  ).pipe(Layer.provideMerge(MemoryStore.layer))
}

describe("TaskRunner reads", () => {
  it.effect("get finds only the caller's tasks; other ids are JOB_NOT_FOUND", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(1_000_000)
      const other = yield* caller(1_000_000)
      const { task } = yield* runner.submit(who, submission())
      expect(yield* runner.get(who, task.id)).toEqual(task)
      for (const id of [Ids.makeTaskId(), "task_nope", "../etc/passwd"]) {
        expect(yield* Effect.flip(runner.get(who, id))).toBeInstanceOf(Errors.JobNotFound)
      }
      const foreign = yield* Effect.flip(runner.get(other, task.id))
      expect(foreign).toBeInstanceOf(Errors.JobNotFound)
      expect(foreign.message).not.toContain(who.accountId)
    }).pipe(Effect.provide(layerWith()))
  )

  it.effect("list returns the caller's latest 100, newest first", () =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(100_000_000)
      const ids: Array<string> = []
      for (let i = 0; i < 102; i++) {
        ids.push((yield* runner.submit(who, submission({ idempotencyKey: `k${i}` }))).task.id)
        yield* TestClock.adjust("1 second")
      }
      const listed = yield* runner.list(who)
      expect(listed.tasks.map((task) => task.id)).toEqual(ids.slice(2).reverse())
      expect(listed.nextCursor).toBe(ids[2])
    }).pipe(Effect.provide(layerWith({ submissionsPerMinute: 1000, maxUnfinishedTasks: 1000 })))
  )
})

describe("Fingerprint", () => {
  it("ignores key order at every depth and tells expected prices apart", () => {
    const a = Fingerprint.of({ model: "m", input: { b: [{ y: 1, x: 2 }], a: "s" }, expectedPriceMicros: undefined })
    const b = Fingerprint.of({ model: "m", input: { a: "s", b: [{ x: 2, y: 1 }] }, expectedPriceMicros: undefined })
    expect(a).toBe(b)
    expect(a).toMatch(/^[0-9a-f]{64}$/)
    expect(Fingerprint.of({ model: "m", input: { a: "s", b: [{ x: 2, y: 1 }] }, expectedPriceMicros: 5 })).not.toBe(a)
    expect(Fingerprint.of({ model: "n", input: { a: "s", b: [{ x: 2, y: 1 }] }, expectedPriceMicros: undefined })).not.toBe(a)
    expect(Fingerprint.canonicalJson({ b: 1, a: [3, { d: null, c: true }] })).toBe('{"a":[3,{"c":true,"d":null}],"b":1}')
  })
})
