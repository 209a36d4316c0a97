/**
 * The conformance suite every store passes (`suite(name, makeLayer, options)`): each port method,
 * the ledger, admission of callers' and keys' requests with its limits and rule order
 * (`AdmissionRules.inStore`), leases and compare-and-set transitions, account scoping, blobs, orphan
 * purges, retention, price-list versions, daily budgets, and random operation sequences against a reference
 * model. Each case gets a fresh store and ends with a clean audit. What it pins: docs/decisions.md.
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
import { choreCases } from "./ChoreCases.ts"
import { priceStoreCases } from "./PriceStoreCases.ts"
import { retentionCases } from "./RetentionCases.ts"
import { taskCases } from "./TaskCases.ts"

export type { Stores } from "./Case.ts"

/** The suite's case groups, in the order they run; `Options.groups` picks some of them. */
export const groups = [
  "accounts",
  "ledger",
  "admission",
  "keyedAdmission",
  "idempotencyPurge",
  "tasks",
  "media",
  "orphanResults",
  "chores",
  "retention",
  "blobs",
  "prices",
  "budgets",
  "auditor",
  "model"
] as const

export type Group = (typeof groups)[number]

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
  /**
   * The groups to run (default all of them), so that a slow store can spread the suite over
   * several test files that run in parallel.
   */
  readonly groups?: ReadonlyArray<Group> | undefined
}

export const suite = <R = never>(
  name: string,
  makeLayer: () => Layer.Layer<Stores | R, unknown>,
  options: Options<R> = {}
): void => {
  describe(`${name} store conformance`, () => {
    const test: Case = (title, body) =>
      it.live(title, () => Effect.andThen(body, expectBooksBalance).pipe(Effect.provide(makeLayer())))

    const selected = (group: Group): boolean => options.groups === undefined || options.groups.includes(group)
    const cases: Record<Exclude<Group, "auditor" | "model">, (test: Case) => void> = {
      accounts: accountStoreCases,
      ledger: ledgerCases,
      admission: admissionCases,
      keyedAdmission: keyedAdmissionCases,
      idempotencyPurge: idempotencyPurgeCases,
      tasks: taskCases,
      media: mediaCases,
      orphanResults: orphanResultCases,
      chores: choreCases,
      retention: retentionCases,
      blobs: blobCases,
      prices: priceStoreCases,
      budgets: budgetStoreCases
    }
    for (const [group, define] of Object.entries(cases)) if (selected(group as Group)) define(test)

    // Without a corrupt hook the auditor's case is not defined (every store in this repository gives one).
    const corrupt = options.corrupt
    if (corrupt !== undefined && selected("auditor")) {
      describe("auditor", () => {
        it.live("catches a cached balance that disagrees with the journal", () =>
          Effect.gen(function* () {
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
          }).pipe(Effect.provide(makeLayer()))
        )
      })
    }

    if (selected("model")) {
      describe("model-based", () => {
        it(
          "random operation sequences keep the books equal to a reference model",
          () => check(makeLayer, { runs: options.modelRuns ?? 25, steps: options.modelSteps ?? 30 }),
          300_000
        )
      })
    }
  })
}
