import { Effect } from "effect"
import { describe, expect } from "@effect/vitest"
import { AccountStore } from "../accounts/AccountStore.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import * as AdmissionRules from "../tasks/AdmissionRules.ts"
import { TaskStore } from "../tasks/TaskStore.ts"
import type { AdmissionLimits, AdmissionRequest } from "../tasks/TaskStore.ts"
import type { Case, Stores } from "./Case.ts"
import {
  admission,
  admit,
  admitted,
  allEntries,
  at,
  claimTask,
  defined,
  entriesOfTask,
  expectBalances,
  fundedAccount,
  grant,
  insertKey,
  makeKey,
  newTask,
  openLimits,
  price,
  refund,
  USD
} from "./Fixtures.ts"

export const admissionCases = (test: Case) =>
  describe("TaskStore.admit", () => {
    test(
      "admits a queued task and reserves its price",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(5 * USD)
        const task = newTask(accountId, { priceMicros: price(2 * USD), unitMicros: price(USD), quantity: 2 })
        const stored = yield* admitted(admission(task))
        expect(stored).toMatchObject({
          id: task.id,
          accountId,
          apiKeyId: null,
          model: task.model,
          input: task.input,
          status: "queued",
          errorCode: null,
          priceMicros: 2 * USD,
          unitMicros: USD,
          quantity: 2,
          settlement: "fixed",
          chargedMicros: null,
          assets: [],
          upstreamRef: null,
          attempts: 0,
          createdAt: task.createdAt,
          updatedAt: task.createdAt,
          deadlineAt: task.deadlineAt
        })
        expect(yield* (yield* TaskStore).get(accountId, task.id)).toEqual(stored)
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: 2 * USD })
        const entries = yield* entriesOfTask(accountId, task.id)
        expect(entries.map((entry) => [entry.kind, entry.amountMicros])).toEqual([["reserve", 2 * USD]])
      })
    )

    test(
      "a task that does not fit is refused and changes nothing",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(USD)
        yield* admitted(admission(newTask(accountId, { priceMicros: price(600_000) })))
        const task = newTask(accountId, { priceMicros: price(500_000) })
        const request = admission(task)
        const before = yield* allEntries(accountId)
        expect(yield* admit(request)).toEqual({ _tag: "InsufficientCredits", availableMicros: 400_000 })
        expect(yield* store.get(accountId, task.id)).toBeUndefined()
        expect(yield* allEntries(accountId)).toEqual(before)
        yield* expectBalances(accountId, { balance: USD, reserved: 600_000 })

        // Nothing was kept under the key: once credits cover it, the same key admits.
        yield* grant(accountId, USD)
        const retried = yield* admitted({ ...request, task: { ...task, createdAt: at(5) } })
        expect(retried.id).toBe(task.id)
      })
    )

    test(
      "the same key and request replays the task without reserving again",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(USD)
        const request = admission(newTask(accountId))
        const original = yield* admitted(request)
        const replay = yield* admit({ ...request, task: { ...newTask(accountId), createdAt: at(10) } })
        expect(replay).toEqual({ _tag: "Replayed", task: original })
        yield* expectBalances(accountId, { balance: USD, reserved: USD })
        expect((yield* allEntries(accountId)).filter((entry) => entry.kind === "reserve").length).toBe(1)
      })
    )

    test(
      "a replay shows the task as it is now, even past every limit",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(USD)
        const request = admission(newTask(accountId))
        const original = yield* admitted(request)
        const claim = yield* claimTask(original.id, at(1))
        yield* (yield* TaskStore).transition({
          taskId: original.id,
          leaseToken: claim.leaseToken,
          from: "queued",
          to: "submitting",
          now: at(2),
          keepLease: true
        })
        yield* refund(accountId, 2 * USD)
        const replay = yield* admit({
          ...request,
          task: { ...request.task, createdAt: at(3) },
          limits: { submissionsPerMinute: 1, maxUnfinishedTasks: 1, keyUsageLimit: 0 }
        })
        expect(replay._tag).toBe("Replayed")
        if (replay._tag === "Replayed") expect(replay.task.status).toBe("submitting")
      })
    )

    test(
      "the same key with another request conflicts and reserves nothing",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const request = admission(newTask(accountId))
        const original = yield* admitted(request)
        const other = newTask(accountId, { createdAt: at(1) })
        const conflict = yield* admit({ ...request, task: other, fingerprint: "fp-something-else" })
        expect(conflict).toEqual({ _tag: "IdempotencyConflict", taskId: original.id })
        expect(yield* store.get(accountId, other.id)).toBeUndefined()
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: USD })
      })
    )

    test(
      "keys are scoped per account",
      Effect.gen(function* () {
        const mine = yield* fundedAccount(USD)
        const theirs = yield* fundedAccount(USD, "theirs")
        const request = admission(newTask(mine), { idempotencyKey: "shared-key" })
        const first = yield* admitted(request)
        const second = yield* admitted({ ...request, task: newTask(theirs) })
        expect(second.id).not.toBe(first.id)
        yield* expectBalances(theirs, { balance: USD, reserved: USD })
      })
    )

    test(
      "an expired key admits anew",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(5 * USD)
        const request = admission(newTask(accountId), { idempotencyExpiresAt: at(60) })
        const first = yield* admitted(request)
        const live = yield* admit({ ...request, task: newTask(accountId, { createdAt: at(59) }) })
        expect(live._tag).toBe("Replayed")
        const later = newTask(accountId, { createdAt: at(60) })
        const fresh = yield* admitted({ ...request, task: later, idempotencyExpiresAt: at(120) })
        expect(fresh.id).toBe(later.id)
        expect(fresh.id).not.toBe(first.id)
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: 2 * USD })
        // The key now protects the new task.
        const replay = yield* admit({ ...request, task: newTask(accountId, { createdAt: at(61) }) })
        expect(replay._tag === "Replayed" && replay.task.id).toBe(later.id)
      })
    )

    test(
      "findIdempotent names a live key's task as it is now, with the request's fingerprint",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const theirs = yield* fundedAccount(5 * USD, "theirs")
        const request = admission(newTask(accountId), { fingerprint: "fp-original", idempotencyExpiresAt: at(60) })
        const original = yield* admitted(request)
        const find = (account: typeof accountId, key: string, now: Date) => store.findIdempotent(account, key, now)
        expect(yield* find(accountId, request.idempotencyKey, at(1))).toEqual({ task: original, fingerprint: "fp-original" })

        const claim = yield* claimTask(original.id, at(2))
        yield* store.transition({
          taskId: original.id,
          leaseToken: claim.leaseToken,
          from: "queued",
          to: "submitting",
          now: at(3),
          keepLease: true
        })
        const found = yield* find(accountId, request.idempotencyKey, at(59))
        expect(found?.task).toEqual(yield* store.get(accountId, original.id))
        expect(found?.task.status).toBe("submitting")

        expect(yield* find(theirs, request.idempotencyKey, at(1))).toBeUndefined()
        expect(yield* find(accountId, "key-never-used", at(1))).toBeUndefined()
        // Expired by admit's rule (live while expiresAt > now), so a new admission could take the key.
        expect(yield* find(accountId, request.idempotencyKey, at(60))).toBeUndefined()
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: USD })
      })
    )

    test(
      "findIdempotent follows a reused key and finds nothing for a refused admission",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(USD)
        const first = admission(newTask(accountId), { idempotencyExpiresAt: at(60) })
        yield* admitted(first)
        const refused = admission(newTask(accountId, { createdAt: at(1) }))
        expect((yield* admit(refused))._tag).toBe("InsufficientCredits")
        expect(yield* store.findIdempotent(accountId, refused.idempotencyKey, at(2))).toBeUndefined()

        yield* grant(accountId, USD)
        const reused = admission(newTask(accountId, { createdAt: at(61) }), {
          idempotencyKey: first.idempotencyKey,
          fingerprint: "fp-reused"
        })
        const later = yield* admitted(reused)
        expect(yield* store.findIdempotent(accountId, first.idempotencyKey, at(62))).toEqual({
          task: later,
          fingerprint: "fp-reused"
        })
      })
    )

    test(
      "a key's usage limit counts admissions only",
      Effect.gen(function* () {
        const accounts = yield* AccountStore
        const accountId = yield* fundedAccount(10 * USD)
        const key = makeKey(accountId, { usageLimit: 2 })
        yield* accounts.insertApiKey(key)
        const limits = { ...openLimits, keyUsageLimit: 2 }
        const first = admission(newTask(accountId, { apiKeyId: key.id }), { limits })
        yield* admitted(first)
        yield* admit({ ...first, task: newTask(accountId, { apiKeyId: key.id }) })
        yield* admitted(admission(newTask(accountId, { apiKeyId: key.id }), { limits }))
        const third = newTask(accountId, { apiKeyId: key.id })
        expect(yield* admit(admission(third, { limits }))).toEqual({ _tag: "KeyUsageExceeded" })
        expect(yield* (yield* TaskStore).get(accountId, third.id)).toBeUndefined()
        expect((yield* accounts.listApiKeys(accountId))[0]?.usageCount).toBe(2)
        yield* expectBalances(accountId, { balance: 10 * USD, reserved: 2 * USD })
      })
    )

    test(
      "submissions per minute are limited per account",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(10 * USD)
        const other = yield* fundedAccount(10 * USD, "other")
        const limits = { ...openLimits, submissionsPerMinute: 2 }
        const submit = (account: typeof accountId, seconds: number) =>
          admit(admission(newTask(account, { createdAt: at(seconds) }), { limits }))
        expect((yield* submit(accountId, 0))._tag).toBe("Admitted")
        expect((yield* submit(accountId, 10))._tag).toBe("Admitted")
        expect(yield* submit(accountId, 20)).toEqual({ _tag: "RateLimited", retryAfterSeconds: 40 })
        expect((yield* submit(other, 20))._tag).toBe("Admitted")
        yield* expectBalances(accountId, { balance: 10 * USD, reserved: 2 * USD })
        expect((yield* submit(accountId, 61))._tag).toBe("Admitted")
      })
    )

    test(
      "unfinished tasks are limited per account",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(10 * USD)
        const limits = { ...openLimits, maxUnfinishedTasks: 1 }
        const first = yield* admitted(admission(newTask(accountId), { limits }))
        expect(yield* admit(admission(newTask(accountId, { createdAt: at(1) }), { limits }))).toEqual({
          _tag: "ConcurrencyLimited"
        })
        yield* expectBalances(accountId, { balance: 10 * USD, reserved: USD })

        const claim = yield* claimTask(first.id, at(2))
        const failed = yield* store.transition({
          taskId: first.id,
          leaseToken: claim.leaseToken,
          from: "queued",
          to: "failed",
          now: at(3),
          errorCode: "DEADLINE_EXCEEDED",
          keepLease: false
        })
        expect(failed._tag).toBe("Done")
        yield* admitted(admission(newTask(accountId, { createdAt: at(4) }), { limits }))
      })
    )

    test(
      "a refund below what is reserved puts the account in payment review",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const ledger = yield* LedgerStore
        const accountId = yield* fundedAccount(3 * USD)
        const held = yield* admitted(admission(newTask(accountId, { priceMicros: price(2 * USD) })))
        const refunded = yield* refund(accountId, 2 * USD)
        expect(refunded.balances).toEqual({
          balanceMicros: USD,
          reservedMicros: 2 * USD,
          availableMicros: -USD,
          paymentReview: true
        })

        const refused = newTask(accountId, { priceMicros: price(1), createdAt: at(1) })
        const request = admission(refused)
        expect(yield* admit(request)).toEqual({ _tag: "PaymentReviewRequired" })
        expect(yield* store.get(accountId, refused.id)).toBeUndefined()

        // A grant that does not cover the shortfall keeps the review.
        yield* grant(accountId, 500_000)
        yield* expectBalances(accountId, { balance: 1_500_000, reserved: 2 * USD, review: true })
        expect(yield* admit(request)).toEqual({ _tag: "PaymentReviewRequired" })

        // The reservation already held stays valid: the task still succeeds and is charged.
        const claim = yield* claimTask(held.id, at(2))
        yield* store.transition({
          taskId: held.id,
          leaseToken: claim.leaseToken,
          from: "queued",
          to: "submitting",
          now: at(3),
          keepLease: true
        })
        const done = yield* store.transition({
          taskId: held.id,
          leaseToken: claim.leaseToken,
          from: "submitting",
          to: "succeeded",
          now: at(4),
          chargeMicros: price(2 * USD),
          keepLease: false
        })
        expect(done._tag).toBe("Done")
        yield* expectBalances(accountId, { balance: -500_000, reserved: 0, review: true })

        yield* grant(accountId, 500_000)
        yield* expectBalances(accountId, { balance: 0, reserved: 0, review: false })
        expect((yield* admit(request))._tag).toBe("InsufficientCredits")
        yield* grant(accountId, 1)
        yield* admitted(request)
        expect(defined(yield* ledger.balances(accountId)).paymentReview).toBe(false)
      })
    )

    test(
      "a refund below zero puts an account with nothing reserved in payment review",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(USD)
        const refunded = yield* refund(accountId, 2 * USD)
        expect(refunded.balances.paymentReview).toBe(true)
        expect(yield* admit(admission(newTask(accountId, { priceMicros: price(1) })))).toEqual({ _tag: "PaymentReviewRequired" })
      })
    )

    test(
      "payment review is checked before credits",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(USD)
        yield* admitted(admission(newTask(accountId)))
        yield* refund(accountId, 1)
        expect(yield* admit(admission(newTask(accountId, { createdAt: at(1) })))).toEqual({ _tag: "PaymentReviewRequired" })
      })
    )

    test(
      "when every rule refuses, each answers in AdmissionRules.inStore order as the earlier ones are lifted",
      Effect.gen(function* () {
        const accountId = yield* fundedAccount(2 * USD)
        const key = yield* insertKey(accountId)
        const tight: AdmissionLimits = { submissionsPerMinute: 1, maxUnfinishedTasks: 1, keyUsageLimit: 1 }
        const first = admission(newTask(accountId, { apiKeyId: key.id }), { limits: tight })
        yield* admitted(first)
        // Key usage, rate and concurrency at their limits; a refund leaves balance below reserved.
        yield* refund(accountId, 1_500_000)
        let request: AdmissionRequest = {
          ...first,
          task: newTask(accountId, { apiKeyId: key.id, createdAt: at(1) }),
          fingerprint: "another request"
        }
        const lift: { readonly [R in AdmissionRules.StoreRule]: Effect.Effect<void, unknown, Stores> } = {
          Idempotency: Effect.sync(() => (request = { ...request, idempotencyKey: "a fresh key" })),
          KeyUsage: Effect.sync(() => (request = { ...request, limits: { ...request.limits, keyUsageLimit: null } })),
          RateLimit: Effect.sync(() => (request = { ...request, limits: { ...request.limits, submissionsPerMinute: 100 } })),
          Concurrency: Effect.sync(() => (request = { ...request, limits: { ...request.limits, maxUnfinishedTasks: 100 } })),
          // Balance 1.1 USD covers the 1 USD reserved: review ends, 0.1 USD is available.
          PaymentReview: Effect.asVoid(grant(accountId, 600_000)),
          Credits: Effect.asVoid(grant(accountId, USD))
        }
        for (const rule of AdmissionRules.inStore) {
          const result = yield* admit(request)
          expect(AdmissionRules.ruleOf(result), `refused by ${result._tag}`).toBe(rule)
          yield* lift[rule]
        }
        expect((yield* admit(request))._tag).toBe("Admitted")
      })
    )
  })
