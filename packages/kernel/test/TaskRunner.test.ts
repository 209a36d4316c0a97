import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as Accounts from "../src/Accounts.ts"
import * as Catalog from "../src/Catalog.ts"
import * as Errors from "../src/Errors.ts"
import * as Fingerprint from "../src/Fingerprint.ts"
import * as Ids from "../src/Ids.ts"
import * as Ledger from "../src/Ledger.ts"
import * as MediaReference from "../src/MediaReference.ts"
import { MediaStore } from "../src/MediaStore.ts"
import { micros } from "../src/Money.ts"
import * as Pricer from "../src/Pricer.ts"
import * as TaskRunner from "../src/TaskRunner.ts"
import { TaskStore } from "../src/TaskStore.ts"

const TEXT_TO_IMAGE = "alpha-pro-text-to-image-economy"
const EDIT = "alpha-pro-edit-economy"
const UNSERVED = "song-lyrics"

const layerWith = (options: Partial<TaskRunner.Options> = {}, stores = MemoryStore.layer) =>
  Layer.mergeAll(
    TaskRunner.layer({ executorAvailable: (model) => model !== UNSERVED, ...options }),
    Accounts.layer(),
    Ledger.layer
  ).pipe(
    Layer.provideMerge(Pricer.layerDefault),
    Layer.provideMerge(Catalog.layer),
    Layer.provideMerge(stores),
    Layer.orDie
  )

/** The memory store, counting the TaskStore calls that admission makes. */
const countingStores = () => {
  const calls = { admit: 0, findIdempotent: 0 }
  const counted = Layer.effect(
    TaskStore,
    Effect.gen(function*() {
      const store = yield* TaskStore
      return TaskStore.of({
        ...store,
        admit: (request) => Effect.suspend(() => (calls.admit++, store.admit(request))),
        findIdempotent: (...args) => Effect.suspend(() => (calls.findIdempotent++, store.findIdempotent(...args)))
      })
    })
  ).pipe(Layer.provideMerge(MemoryStore.layer))
  return { calls, stores: counted }
}

/** A caller of a new account holding `credits` micros. */
const caller = (credits: number, keyOptions: Accounts.KeyOptions = {}) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts.Accounts
    const { account } = yield* accounts.create({ name: "acme", credits: micros(credits) })
    const key = yield* accounts.createKey(account.id, keyOptions)
    return yield* accounts.authenticate(key.secret)
  })

const reserved = (who: Accounts.Caller) =>
  Effect.map(Ledger.Ledger.use((ledger) => ledger.balances(who.accountId)), (balances) => balances.reservedMicros)

const submission = (overrides: Partial<TaskRunner.Submission> = {}): TaskRunner.Submission => ({
  model: TEXT_TO_IMAGE,
  input: { prompt: "a lighthouse at dusk" },
  idempotencyKey: "key-1",
  ...overrides
})

const uploaded = (who: Accounts.Caller) =>
  Effect.gen(function*() {
    const reference = MediaReference.make()
    yield* MediaStore.use((store) =>
      store.putMedia({
        reference,
        accountId: who.accountId,
        contentType: "image/png",
        sizeBytes: 10,
        sha256: "0".repeat(64),
        blobKey: `media/${MediaReference.uuidOf(reference)}`,
        createdAt: new Date(0)
      })
    )
    return reference
  })

describe("TaskRunner.submit", () => {
  it.effect("admits a queued task at the quoted price, with defaults applied", () =>
    Effect.gen(function*() {
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
    }).pipe(Effect.provide(layerWith())))

  it.effect("a retry with the same key and request replays, spelled-out defaults included", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(1_000_000)
      const first = yield* runner.submit(who, submission())
      const again = yield* runner.submit(who, submission({
        input: { resolution: "1k", aspectRatio: "9:16", prompt: "a lighthouse at dusk" }
      }))
      expect(again).toEqual({ task: first.task, replayed: true })
      expect(yield* reserved(who)).toBe(80_000)

      const conflict = yield* Effect.flip(runner.submit(who, submission({ input: { prompt: "a fox" } })))
      expect(conflict).toBeInstanceOf(Errors.IdempotencyConflict)
      const priced = yield* Effect.flip(runner.submit(who, submission({ expectedPriceMicros: 80_000 })))
      expect(priced).toBeInstanceOf(Errors.IdempotencyConflict)
      expect(yield* reserved(who)).toBe(80_000)
    }).pipe(Effect.provide(layerWith())))

  it.effect("keys are kept for the configured time, then admit anew", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(1_000_000)
      const first = yield* runner.submit(who, submission())
      yield* TestClock.adjust("59 minutes")
      expect((yield* runner.submit(who, submission())).replayed).toBe(true)
      yield* TestClock.adjust("1 minute")
      const later = yield* runner.submit(who, submission())
      expect(later.replayed).toBe(false)
      expect(later.task.id).not.toBe(first.task.id)
    }).pipe(Effect.provide(layerWith({ idempotencyTtl: "1 hour" }))))

  it.effect("refusals before admission reserve nothing and keep nothing under the key", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(50_000)
      const changed = yield* Effect.flip(runner.submit(who, submission({ expectedPriceMicros: 70_000 })))
      expect(changed).toBeInstanceOf(Errors.PriceChanged)
      const invalid = yield* Effect.flip(runner.submit(who, submission({ input: { prompt: "" } })))
      expect(invalid).toBeInstanceOf(Errors.InvalidModelInput)
      expect(yield* Effect.flip(runner.submit(who, submission({ model: "no-such-model" })))).toBeInstanceOf(
        Errors.ModelNotFound
      )
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
    }).pipe(Effect.provide(layerWith())))

  it.effect("a retry after the price changed replays; another input conflicts; a new key is PRICE_CHANGED", () => {
    const counting = countingStores()
    return Effect.gen(function*() {
      const runner = yield* TaskRunner.TaskRunner
      const pricer = yield* Pricer.Pricer
      const who = yield* caller(1_000_000)
      const request = submission({ expectedPriceMicros: 80_000 })
      const first = yield* runner.submit(who, request)
      // An admission is one store call; only refusals look the key up.
      expect(counting.calls).toEqual({ admit: 1, findIdempotent: 0 })

      yield* pricer.setModel(TEXT_TO_IMAGE, { enabled: true, priceMicros: 90_000 })
      yield* TestClock.adjust("1 minute")
      expect(yield* runner.submit(who, request)).toEqual({ task: first.task, replayed: true })
      expect(counting.calls).toEqual({ admit: 1, findIdempotent: 1 })
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
      expect((yield* runner.list(who)).map((task) => task.id)).toEqual([first.task.id])
    }).pipe(Effect.provide(layerWith({}, counting.stores)))
  })

  it.effect("a retry after the model lost its executor or was disabled replays; a new key is refused", () => {
    const served = new Set([TEXT_TO_IMAGE])
    return Effect.gen(function*() {
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
    Effect.gen(function*() {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(1_000_000)
      const request = submission({ expectedPriceMicros: 80_000 })
      yield* runner.submit(who, request)
      yield* (yield* Pricer.Pricer).setModel(TEXT_TO_IMAGE, { enabled: true, priceMicros: 90_000 })
      yield* TestClock.adjust("1 hour")
      expect(yield* Effect.flip(runner.submit(who, request))).toBeInstanceOf(Errors.PriceChanged)
    }).pipe(Effect.provide(layerWith({ idempotencyTtl: "1 hour" }))))

  it.effect("media references must be the caller's, and a foreign one reads as missing", () =>
    Effect.gen(function*() {
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
      expect(yield* reserved(who)).toBe(0)

      expect((yield* edit([own, "https://example.com/a.png"], "k3")).task.status).toBe("queued")
    }).pipe(Effect.provide(layerWith())))

  it.effect("limits map to their errors with Retry-After", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(10_000_000)
      yield* runner.submit(who, submission({ idempotencyKey: "a" }))
      yield* runner.submit(who, submission({ idempotencyKey: "b" }))
      const busy = yield* Effect.flip(runner.submit(who, submission({ idempotencyKey: "c" })))
      expect(busy).toBeInstanceOf(Errors.ConcurrencyLimited)
      expect(busy).toMatchObject({ retryAfterSeconds: 5 })
    }).pipe(Effect.provide(layerWith({ maxUnfinishedTasks: 2 }))))

  it.effect("submissions per minute are limited", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(10_000_000)
      yield* runner.submit(who, submission({ idempotencyKey: "a" }))
      yield* TestClock.adjust("15 seconds")
      const limited = yield* Effect.flip(runner.submit(who, submission({ idempotencyKey: "b" })))
      expect(limited).toBeInstanceOf(Errors.RateLimited)
      expect(limited).toMatchObject({ retryAfterSeconds: 45 })
    }).pipe(Effect.provide(layerWith({ submissionsPerMinute: 1 }))))

  it.effect("a key's usage limit is API_KEY_USAGE_EXCEEDED", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(10_000_000, { usageLimit: 1 })
      yield* runner.submit(who, submission({ idempotencyKey: "a" }))
      const exceeded = yield* Effect.flip(runner.submit(who, submission({ idempotencyKey: "b" })))
      expect(exceeded).toBeInstanceOf(Errors.ApiKeyUsageExceeded)
    }).pipe(Effect.provide(layerWith())))

  it.effect("an account in payment review cannot submit", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(100_000)
      yield* Ledger.Ledger.use((ledger) => ledger.refund(who.accountId, micros(200_000)))
      const review = yield* Effect.flip(runner.submit(who, submission()))
      expect(review).toBeInstanceOf(Errors.PaymentReviewRequired)
    }).pipe(Effect.provide(layerWith())))
})

describe("TaskRunner reads", () => {
  it.effect("get finds only the caller's tasks; other ids are JOB_NOT_FOUND", () =>
    Effect.gen(function*() {
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
    }).pipe(Effect.provide(layerWith())))

  it.effect("list returns the caller's latest 100, newest first", () =>
    Effect.gen(function*() {
      const runner = yield* TaskRunner.TaskRunner
      const who = yield* caller(100_000_000)
      const ids: Array<string> = []
      for (let i = 0; i < 102; i++) {
        ids.push((yield* runner.submit(who, submission({ idempotencyKey: `k${i}` }))).task.id)
        yield* TestClock.adjust("1 second")
      }
      const listed = yield* runner.list(who)
      expect(listed.map((task) => task.id)).toEqual(ids.slice(2).reverse())
    }).pipe(Effect.provide(layerWith({ submissionsPerMinute: 1000, maxUnfinishedTasks: 1000 }))))
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
