/**
 * A model-based test of the ledger: random sequences of grants, refunds, adjustments,
 * submissions (with colliding Idempotency-Keys, so replays and conflicts happen), full and
 * partial charges, failures, reconciliations, resolutions and repeated settlements, checked
 * after every step against a reference model small enough to be obviously right.
 */
import { Effect } from "effect"
import type { Layer } from "effect"
import { expect } from "@effect/vitest"
import * as fc from "fast-check"
import type { AccountId, TaskId } from "../domain/Ids.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import { micros } from "../domain/Money.ts"
import { TaskStore } from "../tasks/TaskStore.ts"
import type { AdmissionResult, TransitionRequest } from "../tasks/TaskStore.ts"
import type { TaskStatus } from "../domain/TaskStatus.ts"
import type { Stores } from "./Case.ts"
import { admission, allEntries, expectBalances, fundedAccount, newTask, T0 } from "./Fixtures.ts"

const ACCOUNTS = 2
const KEYS = 3
const KEY_TTL_SECONDS = 3600
const LEASE_MS = 30 * 24 * 3600 * 1000

const account = fc.integer({ min: 0, max: ACCOUNTS - 1 })
const amount = (max: number) => fc.integer({ min: 1, max }).map((n) => n * 100_000)

export type Op =
  | { readonly kind: "grant" | "refund"; readonly account: number; readonly amount: number }
  | { readonly kind: "adjust"; readonly account: number; readonly amount: number }
  | {
      readonly kind: "submit"
      readonly account: number
      readonly key: number
      readonly units: number
      readonly unitMicros: number
      readonly variant: number
    }
  | { readonly kind: "replay"; readonly pick: number }
  | { readonly kind: "succeed"; readonly pick: number; readonly delivered: number }
  | { readonly kind: "fail" | "reconcile" | "repeat"; readonly pick: number }
  | { readonly kind: "resolve"; readonly pick: number; readonly delivered: number }
  | { readonly kind: "tick"; readonly seconds: number }

const weighted = <A>(weight: number, arbitrary: fc.Arbitrary<A>) => ({ weight, arbitrary })

/** Weighted towards money moving: submissions, grants and settlements. */
export const op: fc.Arbitrary<Op> = fc.oneof(
  weighted(3, fc.record({ kind: fc.constant("grant" as const), account, amount: amount(40) })),
  weighted(1, fc.record({ kind: fc.constant("refund" as const), account, amount: amount(40) })),
  weighted(
    1,
    fc.record({
      kind: fc.constant("adjust" as const),
      account,
      amount: fc
        .integer({ min: -10, max: 10 })
        .filter((n) => n !== 0)
        .map((n) => n * 100_000)
    })
  ),
  weighted(
    5,
    fc.record({
      kind: fc.constant("submit" as const),
      account,
      key: fc.integer({ min: 0, max: KEYS - 1 }),
      units: fc.integer({ min: 1, max: 4 }),
      unitMicros: amount(5),
      variant: fc.integer({ min: 0, max: 1 })
    })
  ),
  weighted(2, fc.record({ kind: fc.constant("replay" as const), pick: fc.nat() })),
  weighted(3, fc.record({ kind: fc.constant("succeed" as const), pick: fc.nat(), delivered: fc.integer({ min: 1, max: 4 }) })),
  weighted(3, fc.record({ kind: fc.constantFrom("fail" as const, "reconcile" as const, "repeat" as const), pick: fc.nat() })),
  weighted(2, fc.record({ kind: fc.constant("resolve" as const), pick: fc.nat(), delivered: fc.integer({ min: 0, max: 4 }) })),
  weighted(1, fc.record({ kind: fc.constant("tick" as const), seconds: fc.integer({ min: 1, max: 2 * KEY_TTL_SECONDS }) }))
)

interface ModelAccount {
  readonly id: AccountId
  balance: number
  reserved: number
  review: boolean
  readonly keys: Map<string, { readonly fingerprint: string; readonly taskId: TaskId; readonly expiresAt: number }>
}

interface ModelTask {
  readonly id: TaskId
  readonly account: ModelAccount
  readonly units: number
  readonly unitMicros: number
  status: TaskStatus
  leaseToken: string | null
  /** The request that ended it, sent again by `repeat`. */
  last: TransitionRequest | null
}

type Submit = Extract<Op, { kind: "submit" }>

const run = (ops: ReadonlyArray<Op>) =>
  Effect.gen(function* () {
    const tasks = yield* TaskStore
    const ledger = yield* LedgerStore
    const accounts: Array<ModelAccount> = []
    for (let i = 0; i < ACCOUNTS; i++) {
      accounts.push({ id: yield* fundedAccount(0, `model-${i}`), balance: 0, reserved: 0, review: false, keys: new Map() })
    }
    const modelTasks: Array<ModelTask> = []
    const submissions: Array<Submit> = []
    let clock = T0.getTime()
    const now = () => new Date(clock)
    const pick = (n: number): ModelTask | undefined => modelTasks[n % Math.max(1, modelTasks.length)]

    const submit = (s: Submit) =>
      Effect.gen(function* () {
        const owner = accounts[s.account] as ModelAccount
        const price = s.units * s.unitMicros
        const fingerprint = `fp-${s.units}-${s.unitMicros}-${s.variant}`
        const idempotencyKey = `key-${s.key}`
        const task = newTask(owner.id, {
          priceMicros: micros(price),
          unitMicros: micros(s.unitMicros),
          quantity: s.units,
          settlement: "perDeliveredUnit",
          createdAt: now()
        })
        const result = yield* tasks.admit(
          admission(task, {
            idempotencyKey,
            fingerprint,
            idempotencyExpiresAt: new Date(clock + KEY_TTL_SECONDS * 1000)
          })
        )
        const live = owner.keys.get(idempotencyKey)
        const expected: AdmissionResult["_tag"] =
          live !== undefined && live.expiresAt > clock
            ? live.fingerprint === fingerprint
              ? "Replayed"
              : "IdempotencyConflict"
            : owner.review
              ? "PaymentReviewRequired"
              : owner.balance - owner.reserved < price
                ? "InsufficientCredits"
                : "Admitted"
        expect(result._tag).toBe(expected)
        if (result._tag === "Replayed") expect(result.task.id).toBe(live?.taskId)
        if (result._tag === "IdempotencyConflict") expect(result.taskId).toBe(live?.taskId)
        if (result._tag === "InsufficientCredits") expect(result.availableMicros).toBe(owner.balance - owner.reserved)
        if (result._tag === "Admitted") {
          owner.reserved += price
          owner.keys.set(idempotencyKey, { fingerprint, taskId: task.id, expiresAt: clock + KEY_TTL_SECONDS * 1000 })
          modelTasks.push({ ...s, id: task.id, account: owner, status: "queued", leaseToken: null, last: null })
        }
      })

    /** Leases the task if needed and brings it to running. */
    const start = (task: ModelTask) =>
      Effect.gen(function* () {
        if (task.leaseToken === null) {
          for (const claim of yield* tasks.claim({ workerId: "model", limit: 1000, leaseMs: LEASE_MS, now: now() })) {
            const claimed = modelTasks.find((t) => t.id === claim.task.id)
            if (claimed !== undefined) claimed.leaseToken = claim.leaseToken
          }
        }
        const leaseToken = task.leaseToken as string
        for (const [from, to] of [
          ["queued", "submitting"],
          ["submitting", "running"]
        ] as const) {
          const result = yield* tasks.transition({ taskId: task.id, leaseToken, from, to, now: now(), keepLease: true })
          expect(result._tag).toBe("Done")
        }
        task.status = "running"
        return leaseToken
      })

    const end = (task: ModelTask, to: "succeeded" | "failed" | "reconciliation_required", chargeMicros?: number) =>
      Effect.gen(function* () {
        if (task.status !== "queued") return yield* repeat(task)
        const leaseToken = yield* start(task)
        const request: TransitionRequest = {
          taskId: task.id,
          leaseToken,
          from: "running",
          to,
          now: now(),
          keepLease: false,
          ...(chargeMicros === undefined ? {} : { chargeMicros: micros(chargeMicros) })
        }
        expect((yield* tasks.transition(request))._tag).toBe("Done")
        settle(task, to, chargeMicros)
        task.last = request
      })

    const settle = (task: ModelTask, to: TaskStatus, chargeMicros: number | undefined) => {
      task.status = to
      if (to === "succeeded") {
        task.account.balance -= chargeMicros ?? 0
        task.account.reserved -= task.units * task.unitMicros
      }
      if (to === "failed") task.account.reserved -= task.units * task.unitMicros
    }

    /** Sends the settling request of a finished task again: it must move nothing. */
    const repeat = (task: ModelTask) =>
      Effect.gen(function* () {
        if (task.last === null) return
        const result = yield* Effect.exit(tasks.transition({ ...task.last, now: now() }))
        if (result._tag === "Success") expect(result.value._tag).not.toBe("Done")
      })

    for (const step of ops) {
      clock += 1000
      switch (step.kind) {
        case "grant": {
          const owner = accounts[step.account] as ModelAccount
          yield* ledger.grant({ accountId: owner.id, amountMicros: step.amount, note: null })
          owner.balance += step.amount
          if (owner.balance >= owner.reserved) owner.review = false
          break
        }
        case "refund": {
          const owner = accounts[step.account] as ModelAccount
          yield* ledger.refund({ accountId: owner.id, amountMicros: step.amount, note: null })
          owner.balance -= step.amount
          if (owner.balance < owner.reserved) owner.review = true
          break
        }
        case "adjust": {
          const owner = accounts[step.account] as ModelAccount
          yield* ledger.adjust({ accountId: owner.id, amountMicros: step.amount, note: null })
          owner.balance += step.amount
          break
        }
        case "submit":
          submissions.push(step)
          yield* submit(step)
          break
        case "replay": {
          const earlier = submissions[step.pick % Math.max(1, submissions.length)]
          if (earlier !== undefined) yield* submit(earlier)
          break
        }
        case "succeed": {
          const task = pick(step.pick)
          if (task !== undefined) yield* end(task, "succeeded", Math.min(step.delivered, task.units) * task.unitMicros)
          break
        }
        case "fail":
        case "reconcile": {
          const task = pick(step.pick)
          if (task !== undefined) yield* end(task, step.kind === "fail" ? "failed" : "reconciliation_required")
          break
        }
        case "repeat": {
          const task = pick(step.pick)
          if (task !== undefined) yield* repeat(task)
          break
        }
        case "resolve": {
          const task = pick(step.pick)
          if (task === undefined) break
          const succeed = step.delivered > 0
          const chargeMicros = succeed ? Math.min(step.delivered, task.units) * task.unitMicros : undefined
          const resolved = yield* tasks.resolve({
            taskId: task.id,
            to: succeed ? "succeeded" : "failed",
            now: now(),
            ...(chargeMicros === undefined ? {} : { chargeMicros: micros(chargeMicros) })
          })
          if (task.status === "reconciliation_required") {
            expect(resolved?.status).toBe(succeed ? "succeeded" : "failed")
            settle(task, succeed ? "succeeded" : "failed", chargeMicros)
          } else {
            expect(resolved).toBeUndefined()
          }
          break
        }
        case "tick":
          clock += step.seconds * 1000
          break
      }

      for (const owner of accounts) {
        yield* expectBalances(owner.id, { balance: owner.balance, reserved: owner.reserved, review: owner.review })
        const movements = new Map<string, number>()
        for (const entry of yield* allEntries(owner.id)) {
          if (entry.taskId === null) continue
          const key = `${entry.taskId}/${entry.kind}`
          movements.set(key, (movements.get(key) ?? 0) + 1)
        }
        for (const [key, count] of movements) expect(count, `${key} entries`).toBe(1)
      }
      for (const task of modelTasks) {
        const stored = yield* tasks.get(task.account.id, task.id)
        expect(stored?.status).toBe(task.status)
      }
      expect(yield* ledger.audit).toEqual([])
    }
  })

/** Runs `runs` random sequences of up to `steps` operations, each against a fresh store. */
export const check = <R>(
  makeLayer: () => Layer.Layer<Stores | R, unknown>,
  options: { readonly runs: number; readonly steps: number }
) =>
  fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: options.steps, size: "max" }), (ops) =>
      Effect.runPromise(run(ops).pipe(Effect.provide(makeLayer())))
    ),
    { numRuns: options.runs }
  )
