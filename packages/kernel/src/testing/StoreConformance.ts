/**
 * The one conformance suite every store passes: each port method, the ledger semantics
 * (reservations, charges once, releases once, payment review, pagination), idempotent
 * admission and its limits, admission on behalf of a key, leases and compare-and-set
 * transitions, scoping by account, blobs, the purge of orphaned result records (which tasks'
 * records go, when, concurrent purges), the price list's versions (compare-and-set saves,
 * wake-ups of subscribers), the daily budgets' totals (takes within a limit, concurrent takes),
 * and a model-based test of random operation sequences against a reference model.
 *
 * Every case builds a fresh store from `makeLayer` (a store backed by a database gives each
 * case its own schema or database) and passes every `now` explicitly, so nothing depends on
 * the wall clock except `awaitWork`'s own wait. Every case ends by asking the auditor, which
 * must find nothing.
 *
 * What the suite pins down where the port JSDoc leaves room:
 * - Transitions: a pair `canTransition` refuses is IllegalTransition, checked first; a wrong
 *   lease token, a status other than `from` or an unknown task is LeaseLost. Entering a terminal
 *   status, or any status with `keepLease: false`, drops the lease. A succeeded transition
 *   without `chargeMicros`, or with one above the reservation, is refused (a defect or a result
 *   other than Done) and writes nothing; the same for `resolve`.
 * - Settlement entries: a charge entry on every success (its amount may be below the
 *   reservation), a release entry for the remainder only when it is above zero, a release of the
 *   whole reservation on failure.
 * - Idempotency: a key is live while `idempotencyExpiresAt > task.createdAt`; a purge deletes
 *   keys with `idempotencyExpiresAt <= cutoff` only, any `limit` of them, of every account.
 * - Windows: a key's request window and an account's submission window last 60 s from the first
 *   request counted in them and restart at `now >= start + 60 s`; RateLimited's
 *   retryAfterSeconds is the whole seconds left in the window, at least 1.
 * - Payment review: a refund that leaves balance below reserved sets it, a grant that leaves
 *   balance at or above reserved clears it, adjustments leave it as it is.
 * - Entries: in insertion order (newest first); `nextCursor` is null when no older entry
 *   exists, so a page never leads to an empty one.
 * - listByStatus: ids in code-unit order (a SQL store compares them with COLLATE "C").
 * - admitWithKey: `authenticated` is the key as it was before this admission (its usage count
 *   not yet raised by it), as an `authenticate` called first would answer; the request is
 *   counted whether or not the key passes, and concurrent requests of one key are counted and
 *   checked one after another, so exactly the key's rate of them pass.
 * - Price lists: a save based on any version but the current one (a past one, a future one, or
 *   one on an empty store) is a conflict, so versions have no gaps; a list is read back as
 *   saved (JSON equality, safe integers exact); a subscriber is woken within 5 s of a save and
 *   not before any save was made.
 * - Orphaned results: a record is purged only when created strictly before the cutoff, of any
 *   account; an answer lists exactly the records that call deleted, so concurrent purges' answers
 *   add up to the orphans.
 * - Budgets: a take of 0 passes while the total is at most the limit; a take with a lower limit
 *   than an earlier one is judged against its own; a giveBack on a day never taken from leaves 0.
 *
 * @example
 * ```ts
 * // packages/storage-memory/test/conformance.test.ts
 * StoreConformance.suite("storage-memory", () => MemoryStore.layerTesting, { corrupt: MemoryStore.corruptBalance })
 * ```
 */
import { Effect } from "effect"
import type { Layer } from "effect"
import { describe, expect, it } from "@effect/vitest"
import type { AccountId } from "../domain/Ids.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import { accountStoreCases } from "./AccountStoreCases.ts"
import { admissionCases } from "./AdmissionCases.ts"
import { blobCases } from "./BlobCases.ts"
import { budgetStoreCases } from "./BudgetStoreCases.ts"
import type { Case, Stores } from "./Case.ts"
import { expectBooksBalance, fundedAccount, USD } from "./Fixtures.ts"
import { idempotencyPurgeCases } from "./IdempotencyPurgeCases.ts"
import { keyedAdmissionCases } from "./KeyedAdmissionCases.ts"
import { ledgerCases } from "./LedgerCases.ts"
import { check } from "./LedgerModel.ts"
import { mediaCases } from "./MediaCases.ts"
import { orphanResultCases } from "./OrphanResultCases.ts"
import { priceStoreCases } from "./PriceStoreCases.ts"
import { taskCases } from "./TaskCases.ts"

export type { Stores } from "./Case.ts"

export interface Options<R> {
  /**
   * Changes an account's cached balance behind the journal's back (the memory store through
   * a test handle, a SQL store with an UPDATE), to prove that the auditor notices. Without
   * it the auditor case is skipped, and says so.
   */
  readonly corrupt?: ((accountId: AccountId) => Effect.Effect<void, unknown, Stores | R>) | undefined
  /** Random sequences in the model-based test (default 25) and their longest length (default 30). */
  readonly modelRuns?: number | undefined
  readonly modelSteps?: number | undefined
}

export const suite = <R = never>(
  name: string,
  makeLayer: () => Layer.Layer<Stores | R, unknown>,
  options: Options<R> = {}
): void => {
  describe(`${name} store conformance`, () => {
    const test: Case = (title, body) =>
      it.live(title, () => Effect.andThen(body, expectBooksBalance).pipe(Effect.provide(makeLayer())))

    accountStoreCases(test)
    ledgerCases(test)
    admissionCases(test)
    keyedAdmissionCases(test)
    idempotencyPurgeCases(test)
    taskCases(test)
    mediaCases(test)
    orphanResultCases(test)
    blobCases(test)
    priceStoreCases(test)
    budgetStoreCases(test)

    describe("auditor", () => {
      const corrupt = options.corrupt
      // Without a corrupt hook the auditor's case is not defined (every store in this repository gives one).
      if (corrupt === undefined) return
      it.live("catches a cached balance that disagrees with the journal", () =>
        Effect.gen(function*() {
          const ledger = yield* LedgerStore
          const clean = yield* fundedAccount(2 * USD, "clean")
          const tampered = yield* fundedAccount(5 * USD, "tampered")
          yield* expectBooksBalance
          yield* corrupt(tampered)
          const findings = yield* ledger.audit
          expect(findings.map((finding) => finding.accountId)).toEqual([tampered])
          expect(findings[0]?.journal).toEqual({ balanceMicros: 5 * USD, reservedMicros: 0 })
          expect(findings[0]?.cached).not.toEqual(findings[0]?.journal)
          expect(findings.some((finding) => finding.accountId === clean)).toBe(false)
        }).pipe(Effect.provide(makeLayer())))
    })

    describe("model-based", () => {
      it("random operation sequences keep the books equal to a reference model", () =>
        check(makeLayer, { runs: options.modelRuns ?? 25, steps: options.modelSteps ?? 30 }), 300_000)
    })
  })
}
