import { createHash } from "node:crypto"
import { Effect } from "effect"
import { describe, expect } from "@effect/vitest"
import { AccountStore } from "../accounts/AccountStore.ts"
import type { AccountId } from "../domain/Ids.ts"
import * as KeyCheck from "../accounts/KeyCheck.ts"
import { TaskStore } from "../tasks/TaskStore.ts"
import type { AdmissionResult, KeyedAdmission, KeyedAdmissionRequest, TaskRecord } from "../tasks/TaskStore.ts"
import type { Case } from "./Case.ts"
import {
  admitKeyed,
  allEntries,
  at,
  balances,
  defined,
  entriesOfTask,
  expectBalances,
  fundedAccount,
  grant,
  insertKey,
  keyedAdmission,
  keyedTask,
  price,
  refund,
  T0,
  USD
} from "./Fixtures.ts"

/** Insists on a new task. */
const admittedBy = (result: KeyedAdmission): TaskRecord => {
  expect(result.admission?._tag).toBe("Admitted")
  return (result.admission as Extract<AdmissionResult, { _tag: "Admitted" }>).task
}

/** Everything of the account an admission could write, but the key's request window. */
const written = (accountId: AccountId) =>
  Effect.all({
    tasks: TaskStore.use((store) => store.list(accountId, 1000)),
    entries: allEntries(accountId),
    balances: balances(accountId),
    keys: AccountStore.use((store) => store.listApiKeys(accountId))
  })

/** The same request again at `seconds`: its task created then, its key checked then. */
const againAt = (request: KeyedAdmissionRequest, seconds: number): KeyedAdmissionRequest => ({
  ...request,
  key: { ...request.key, now: at(seconds) },
  task: { ...request.task, createdAt: at(seconds) }
})

/** The same request on behalf of another key. */
const withKey = (request: KeyedAdmissionRequest, hash: string): KeyedAdmissionRequest => ({
  ...request,
  key: { ...request.key, hash }
})

const usageCounts = (accountId: AccountId) =>
  Effect.map(
    AccountStore.use((store) => store.listApiKeys(accountId)),
    (keys) => Object.fromEntries(keys.map((key) => [key.id, key.usageCount]))
  )

const requestsCounted = (hash: string, now: Date) =>
  Effect.map(
    AccountStore.use((store) => store.authenticate(hash, now)),
    (found) => defined(found).requestsInWindow
  )

export const keyedAdmissionCases = (test: Case) =>
  describe("TaskStore.admit of a key's request", () => {
    test(
      "a passing key admits under its account and id, its request counted as authenticate counts",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accounts = yield* AccountStore
        const accountId = yield* fundedAccount(5 * USD)
        const key = yield* insertKey(accountId)
        const request = keyedAdmission(key.hash, { task: { createdAt: at(10), priceMicros: price(2 * USD) } })
        const result = yield* admitKeyed(request)
        // What authenticate answers for this request: the key as it was before the admission used it.
        expect(result.authenticated).toEqual({ key, requestsInWindow: 1, windowResetsAt: at(70) })
        const task = admittedBy(result)
        expect(task).toMatchObject({
          ...request.task,
          accountId,
          apiKeyId: key.id,
          status: "queued",
          errorCode: null,
          chargedMicros: null,
          assets: [],
          attempts: 0,
          updatedAt: at(10)
        })
        expect(yield* store.get(accountId, task.id)).toEqual(task)
        expect(yield* store.findIdempotent(accountId, request.idempotencyKey, at(11))).toEqual({
          task,
          fingerprint: request.fingerprint
        })
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: 2 * USD })
        const entries = yield* entriesOfTask(accountId, task.id)
        expect(entries.map((entry) => [entry.kind, entry.amountMicros])).toEqual([["reserve", 2 * USD]])
        expect(defined(yield* accounts.authenticate(key.hash, at(20)))).toEqual({
          key: { ...key, usageCount: 1 },
          requestsInWindow: 2,
          windowResetsAt: at(70)
        })
      })
    )

    test(
      "an unknown hash admits nothing and counts nothing",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(5 * USD)
        const key = yield* insertKey(accountId)
        const before = yield* written(accountId)
        const request = keyedAdmission(createHash("sha256").update("tm_never-issued").digest("hex"))
        expect(yield* admitKeyed(request)).toEqual({ authenticated: undefined, admission: undefined })
        expect(yield* written(accountId)).toEqual(before)
        expect(yield* requestsCounted(key.hash, at(1))).toBe(1)
        const known = admittedBy(yield* admitKeyed(withKey(againAt(request, 2), key.hash)))
        expect(known.id).toBe(request.task.id)
      })
    )

    test(
      "a revoked key admits nothing, but its request is counted",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const key = yield* insertKey(accountId)
        yield* (yield* AccountStore).revokeApiKey(accountId, key.id, at(1))
        const before = yield* written(accountId)
        const request = keyedAdmission(key.hash, { task: { createdAt: at(2) } })
        expect(yield* admitKeyed(request)).toEqual({
          authenticated: { key: { ...key, revokedAt: at(1) }, requestsInWindow: 1, windowResetsAt: at(62) },
          admission: undefined
        })
        expect(yield* written(accountId)).toEqual(before)
        expect(yield* store.findIdempotent(accountId, request.idempotencyKey, at(3))).toBeUndefined()
        expect(yield* requestsCounted(key.hash, at(3))).toBe(2)

        // Nothing was kept under the Idempotency-Key: another key of the account admits with it.
        const other = yield* insertKey(accountId)
        const admitted = admittedBy(yield* admitKeyed(withKey(againAt(request, 4), other.hash)))
        expect(admitted).toMatchObject({ id: request.task.id, apiKeyId: other.id })
      })
    )

    test(
      "a key over its rate admits nothing, but is counted; its next window admits the request",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const key = yield* insertKey(accountId, { rateLimitPerMinute: 2 })
        admittedBy(yield* admitKeyed(keyedAdmission(key.hash)))
        admittedBy(yield* admitKeyed(keyedAdmission(key.hash, { task: { createdAt: at(10) } })))
        const before = yield* written(accountId)
        const request = keyedAdmission(key.hash, { task: { createdAt: at(20) } })
        expect(yield* admitKeyed(request)).toEqual({
          authenticated: { key: { ...key, usageCount: 2 }, requestsInWindow: 3, windowResetsAt: at(60) },
          admission: undefined
        })
        expect(yield* written(accountId)).toEqual(before)
        expect(yield* store.findIdempotent(accountId, request.idempotencyKey, at(21))).toBeUndefined()
        expect(yield* requestsCounted(key.hash, at(30))).toBe(4)

        const retried = yield* admitKeyed(againAt(request, 60))
        expect(retried.authenticated).toMatchObject({ requestsInWindow: 1, windowResetsAt: at(120) })
        expect(admittedBy(retried).id).toBe(request.task.id)
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: 3 * USD })
      })
    )

    test(
      "a key without its own rate gets the request's default; a key with one keeps its own",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(5 * USD)
        const plain = yield* insertKey(accountId)
        const own = yield* insertKey(accountId, { rateLimitPerMinute: 2 })
        const submit = (hash: string, seconds: number) =>
          admitKeyed(keyedAdmission(hash, { task: { createdAt: at(seconds) }, check: { defaultRateLimitPerMinute: 1 } }))
        admittedBy(yield* submit(plain.hash, 0))
        const before = yield* written(accountId)
        const refused = yield* submit(plain.hash, 1)
        expect(refused.admission).toBeUndefined()
        expect(refused.authenticated?.requestsInWindow).toBe(2)
        expect(yield* written(accountId)).toEqual(before)

        admittedBy(yield* submit(own.hash, 2))
        admittedBy(yield* submit(own.hash, 3))
        expect((yield* submit(own.hash, 4)).admission).toBeUndefined()
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: 3 * USD })
      })
    )

    test(
      "a key lacking the request's scope admits nothing, but is counted",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const readOnly = yield* insertKey(accountId, { scopes: ["jobs:read", "usage:read"] })
        const before = yield* written(accountId)
        const request = keyedAdmission(readOnly.hash, { task: { createdAt: at(1) } })
        expect(yield* admitKeyed(request)).toEqual({
          authenticated: { key: readOnly, requestsInWindow: 1, windowResetsAt: at(61) },
          admission: undefined
        })
        expect(yield* written(accountId)).toEqual(before)
        expect(yield* store.findIdempotent(accountId, request.idempotencyKey, at(2))).toBeUndefined()
        expect(yield* requestsCounted(readOnly.hash, at(2))).toBe(2)

        // The scope is the request's to name, not always jobs:create.
        const asRead = yield* admitKeyed(
          keyedAdmission(readOnly.hash, { task: { createdAt: at(3) }, check: { scope: "jobs:read" } })
        )
        expect(admittedBy(asRead).apiKeyId).toBe(readOnly.id)

        const creator = yield* insertKey(accountId, { scopes: ["jobs:create"] })
        const admitted = admittedBy(yield* admitKeyed(withKey(againAt(request, 4), creator.hash)))
        expect(admitted).toMatchObject({ id: request.task.id, apiKeyId: creator.id })
      })
    )

    test(
      "admitKeyed and authenticate count in one window",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(5 * USD)
        const key = yield* insertKey(accountId, { rateLimitPerMinute: 3 })
        const submit = (seconds: number) => admitKeyed(keyedAdmission(key.hash, { task: { createdAt: at(seconds) } }))
        const authenticate = (seconds: number) => AccountStore.use((store) => store.authenticate(key.hash, at(seconds)))
        expect(yield* authenticate(0)).toMatchObject({ requestsInWindow: 1, windowResetsAt: at(60) })
        const second = yield* submit(10)
        expect(second.authenticated).toMatchObject({ requestsInWindow: 2, windowResetsAt: at(60) })
        admittedBy(second)
        expect(yield* authenticate(20)).toMatchObject({ requestsInWindow: 3, windowResetsAt: at(60) })
        const fourth = yield* submit(30)
        expect(fourth.authenticated).toMatchObject({ requestsInWindow: 4, windowResetsAt: at(60) })
        expect(fourth.admission).toBeUndefined()

        // A window an admission starts is the one authenticate goes on counting in.
        const fifth = yield* submit(60)
        expect(fifth.authenticated).toMatchObject({ requestsInWindow: 1, windowResetsAt: at(120) })
        admittedBy(fifth)
        expect(yield* authenticate(61)).toMatchObject({ requestsInWindow: 2, windowResetsAt: at(120) })
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: 2 * USD })
      })
    )

    test(
      "under a passing key, a refused admission writes nothing but the count",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(USD)
        const key = yield* insertKey(accountId)
        admittedBy(yield* admitKeyed(keyedAdmission(key.hash, { task: { priceMicros: price(600_000) } })))
        const before = yield* written(accountId)
        const request = keyedAdmission(key.hash, { task: { createdAt: at(1), priceMicros: price(500_000) } })
        expect(yield* admitKeyed(request)).toEqual({
          authenticated: { key: { ...key, usageCount: 1 }, requestsInWindow: 2, windowResetsAt: at(60) },
          admission: { _tag: "InsufficientCredits", availableMicros: 400_000 }
        })
        expect(yield* written(accountId)).toEqual(before)
        expect(yield* requestsCounted(key.hash, at(2))).toBe(3)

        yield* grant(accountId, USD)
        expect(admittedBy(yield* admitKeyed(againAt(request, 3))).id).toBe(request.task.id)
      })
    )

    test(
      "the key's usage limit comes from the key and counts admissions only",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(10 * USD)
        const key = yield* insertKey(accountId, { usageLimit: 2 })
        const first = keyedAdmission(key.hash)
        admittedBy(yield* admitKeyed(first))
        expect((yield* admitKeyed({ ...againAt(first, 1), task: keyedTask({ createdAt: at(1) }) })).admission?._tag).toBe(
          "Replayed"
        )
        admittedBy(yield* admitKeyed(keyedAdmission(key.hash, { task: { createdAt: at(2) } })))
        const before = yield* written(accountId)
        const third = keyedAdmission(key.hash, { task: { createdAt: at(3) } })
        expect((yield* admitKeyed(third)).admission).toEqual({ _tag: "KeyUsageExceeded" })
        expect(yield* written(accountId)).toEqual(before)
        expect((yield* usageCounts(accountId))[key.id]).toBe(2)

        // Each key has its own count: another key of the account admits the same request.
        const fresh = yield* insertKey(accountId, { usageLimit: 1 })
        const admitted = admittedBy(yield* admitKeyed(withKey(againAt(third, 4), fresh.hash)))
        expect(admitted).toMatchObject({ id: third.task.id, apiKeyId: fresh.id })
        yield* expectBalances(accountId, { balance: 10 * USD, reserved: 3 * USD })
      })
    )

    test(
      "an Idempotency-Key replays or conflicts for every key of the account, past the key's limits",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(5 * USD)
        const key = yield* insertKey(accountId, { usageLimit: 1 })
        const other = yield* insertKey(accountId)
        const request = keyedAdmission(key.hash, { idempotencyKey: "shared-key" })
        const original = admittedBy(yield* admitKeyed(request))
        const retry = (seconds: number, hash: string) =>
          withKey({ ...againAt(request, seconds), task: keyedTask({ createdAt: at(seconds) }) }, hash)

        expect((yield* admitKeyed(retry(10, key.hash))).admission).toEqual({ _tag: "Replayed", task: original })
        expect((yield* admitKeyed(retry(11, other.hash))).admission).toEqual({ _tag: "Replayed", task: original })
        const conflict = yield* admitKeyed({ ...retry(12, other.hash), fingerprint: "fp-something-else" })
        expect(conflict.admission).toEqual({ _tag: "IdempotencyConflict", taskId: original.id })
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: USD })
        expect(yield* usageCounts(accountId)).toEqual({ [key.id]: 1, [other.id]: 0 })

        // Idempotency-Keys are the account's: another account's key admits its own task.
        const theirs = yield* fundedAccount(5 * USD, "theirs")
        const theirKey = yield* insertKey(theirs)
        const own = admittedBy(yield* admitKeyed(retry(13, theirKey.hash)))
        expect(own).toMatchObject({ accountId: theirs, apiKeyId: theirKey.id })
      })
    )

    test(
      "under a passing key, the account's limits refuse as admit does",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(2 * USD)
        const key = yield* insertKey(accountId)
        const limits = { submissionsPerMinute: 1, maxUnfinishedTasks: 1 }
        const submit = (seconds: number, requestLimits = limits) =>
          admitKeyed(keyedAdmission(key.hash, { task: { createdAt: at(seconds) }, limits: requestLimits }))
        admittedBy(yield* submit(0))
        expect((yield* submit(15)).admission).toEqual({ _tag: "RateLimited", retryAfterSeconds: 45 })
        expect((yield* submit(60)).admission).toEqual({ _tag: "ConcurrencyLimited" })
        yield* refund(accountId, 2 * USD)
        const open = { submissionsPerMinute: 1_000_000, maxUnfinishedTasks: 1_000_000 }
        expect((yield* submit(61, open)).admission).toEqual({ _tag: "PaymentReviewRequired" })
        yield* expectBalances(accountId, { balance: 0, reserved: USD, review: true })
      })
    )

    test(
      "of concurrent requests with one key, exactly its rate are admitted and every one is counted",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(100 * USD)
        const key = yield* insertKey(accountId, { rateLimitPerMinute: 3 })
        const requests = Array.from({ length: 8 }, () => keyedAdmission(key.hash))
        const results = yield* Effect.all(requests.map(admitKeyed), { concurrency: "unbounded" })

        const counts = results.map((result) => defined(result.authenticated).requestsInWindow)
        expect(counts.toSorted((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
        const admitted = results.filter((result) => result.admission !== undefined)
        expect(admitted.map((result) => result.admission?._tag)).toEqual(["Admitted", "Admitted", "Admitted"])
        const admittedCounts = admitted.map((result) => defined(result.authenticated).requestsInWindow)
        expect(admittedCounts.toSorted((a, b) => a - b)).toEqual([1, 2, 3])
        results.forEach((result, i) => {
          if (result.admission === undefined) {
            expect(KeyCheck.refusal(result.authenticated, defined(requests[i]).key)).toBe("RateLimited")
          }
        })
        expect(yield* requestsCounted(key.hash, at(1))).toBe(9)
        expect((yield* (yield* TaskStore).list(accountId, 100)).length).toBe(3)
        expect(yield* usageCounts(accountId)).toEqual({ [key.id]: 3 })
        yield* expectBalances(accountId, { balance: 100 * USD, reserved: 3 * USD })
      })
    )

    test(
      "of concurrent requests with one Idempotency-Key, one admits and the rest replay it",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(100 * USD)
        const key = yield* insertKey(accountId)
        const request = keyedAdmission(key.hash, { idempotencyKey: "one-key" })
        const results = yield* Effect.all(
          Array.from({ length: 5 }, () => admitKeyed({ ...request, task: keyedTask({ createdAt: T0 }) })),
          { concurrency: "unbounded" }
        )
        const admitted = results.filter((result) => result.admission?._tag === "Admitted")
        expect(admitted.length).toBe(1)
        const task = admittedBy(defined(admitted[0]))
        expect(results.filter((result) => result !== admitted[0]).map((result) => result.admission)).toEqual(
          Array.from({ length: 4 }, () => ({ _tag: "Replayed", task }))
        )
        expect(yield* requestsCounted(key.hash, at(1))).toBe(6)
        yield* expectBalances(accountId, { balance: 100 * USD, reserved: USD })
      })
    )
  })
