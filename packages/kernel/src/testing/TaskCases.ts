import { Effect, Exit, Fiber } from "effect"
import { describe, expect } from "@effect/vitest"
import * as Ids from "../domain/Ids.ts"
import type { AccountId } from "../domain/Ids.ts"
import { StoreHealth } from "../observability/StoreHealth.ts"
import { TaskStore } from "../tasks/TaskStore.ts"
import type { StoredAsset, TaskRecord, TransitionRequest, TransitionResult } from "../tasks/TaskStore.ts"
import { cancelCases } from "./CancelCases.ts"
import type { Case } from "./Case.ts"
import { slotCases } from "./SlotCases.ts"
import { streamSlotCases } from "./StreamSlotCases.ts"
import { listCases } from "./ListCases.ts"
import {
  admission,
  admitted,
  allEntries,
  at,
  claimTask,
  defined,
  entriesOfTask,
  expectBalances,
  fundedAccount,
  newTask,
  price,
  USD
} from "./Fixtures.ts"

const image: StoredAsset = {
  id: "asset-1",
  type: "image",
  resultId: Ids.makeResultId(),
  mimeType: "image/png",
  metadata: { width: 1024, height: 1024 }
}

/** Admits a task and walks it to `running` under one lease. */
const running = (accountId: AccountId, overrides: Parameters<typeof newTask>[1] = {}) =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    const task = yield* admitted(admission(newTask(accountId, overrides)))
    const claim = yield* claimTask(task.id, at(1))
    const step = (from: TaskRecord["status"], to: TaskRecord["status"], seconds: number) =>
      store.transition({ taskId: task.id, leaseToken: claim.leaseToken, from, to, now: at(seconds), keepLease: true })
    expect((yield* step("queued", "submitting", 2))._tag).toBe("Done")
    const result = yield* store.transition({
      taskId: task.id,
      leaseToken: claim.leaseToken,
      from: "submitting",
      to: "running",
      now: at(3),
      upstreamRef: "upstream-42",
      keepLease: true
    })
    expect(result._tag).toBe("Done")
    return { task, leaseToken: claim.leaseToken }
  })

const finish = (
  taskId: TaskRecord["id"],
  leaseToken: string,
  to: TransitionRequest["to"],
  extra: Partial<TransitionRequest> = {}
): TransitionRequest => ({ taskId, leaseToken, from: "running", to, now: at(10), keepLease: false, ...extra })

/** A transition the store must refuse, by a result other than Done or by failing, writing nothing. */
const expectRefused = (request: TransitionRequest) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit((yield* TaskStore).transition(request))
    if (Exit.isSuccess(exit)) expect(exit.value._tag).not.toBe("Done")
  })

const done = (result: TransitionResult): TaskRecord => {
  expect(result._tag).toBe("Done")
  return (result as Extract<TransitionResult, { _tag: "Done" }>).task
}

export const taskCases = (test: Case) => {
  describe("TaskStore trace context", () => {
    test(
      "keeps the submitting request's traceparent with the task for every reader; none when it had none",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const account = yield* fundedAccount(10 * USD)
        const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        const traced = yield* admitted(admission(newTask(account, { traceparent })))
        const plain = yield* admitted(admission(newTask(account)))
        expect(traced.traceparent).toBe(traceparent)
        expect(plain.traceparent).toBeUndefined()
        expect(defined(yield* store.get(account, traced.id)).traceparent).toBe(traceparent)
        expect(defined(yield* store.get(account, plain.id)).traceparent).toBeUndefined()
        const claims = yield* store.claim({ workerId: "worker-a", limit: 10, leaseMs: 60_000, now: at(1) })
        expect(claims.find((claim) => claim.task.id === traced.id)?.task.traceparent).toBe(traceparent)
        expect(defined(claims.find((claim) => claim.task.id === plain.id)).task.traceparent).toBeUndefined()
      })
    )
  })

  describe("StoreHealth", () => {
    test(
      "is ready, and counts unfinished tasks by status and model, finished ones not at all",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const health = yield* StoreHealth
        yield* health.check
        const account = yield* fundedAccount(10 * USD)
        const depthOf = (status: string, model: string) =>
          Effect.map(health.queueDepth, (rows) => rows.find((row) => row.status === status && row.model === model)?.tasks ?? 0)
        const before = yield* depthOf("queued", "depth-model")
        const first = yield* admitted(admission(newTask(account, { model: "depth-model" })))
        yield* admitted(admission(newTask(account, { model: "depth-model" })))
        expect(yield* depthOf("queued", "depth-model")).toBe(before + 2)
        const claim = yield* claimTask(first.id, at(1))
        yield* store.transition({
          taskId: first.id,
          leaseToken: claim.leaseToken,
          from: "queued",
          to: "failed",
          now: at(2),
          errorCode: "DEADLINE_EXCEEDED",
          keepLease: false
        })
        expect(yield* depthOf("queued", "depth-model")).toBe(before + 1)
        expect(yield* depthOf("failed", "depth-model")).toBe(0)
      })
    )
  })

  slotCases(test)
  streamSlotCases(test)
  cancelCases(test)
  listCases(test)
  describe("TaskStore reads", () => {
    test(
      "tasks are read only by their account, newest first",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const mine = yield* fundedAccount(10 * USD)
        const theirs = yield* fundedAccount(10 * USD, "theirs")
        const ids: Array<string> = []
        for (let i = 0; i < 3; i++) ids.push((yield* admitted(admission(newTask(mine, { createdAt: at(i) })))).id)
        const foreign = yield* admitted(admission(newTask(theirs)))
        expect(yield* store.get(mine, foreign.id)).toBeUndefined()
        expect(yield* store.get(mine, Ids.makeTaskId())).toBeUndefined()
        expect((yield* store.list(mine, 100)).map((task) => task.id)).toEqual(ids.slice().reverse())
        expect((yield* store.list(mine, 2)).map((task) => task.id)).toEqual([ids[2], ids[1]])
        expect((yield* store.list(theirs, 100)).map((task) => task.id)).toEqual([foreign.id])
      })
    )

    test(
      "listByStatus pages through one status across accounts, by id",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const mine = yield* fundedAccount(10 * USD)
        const theirs = yield* fundedAccount(10 * USD, "theirs")
        const queued: Array<string> = []
        for (let i = 0; i < 3; i++) {
          queued.push((yield* admitted(admission(newTask(mine, { createdAt: at(i) })))).id)
          queued.push((yield* admitted(admission(newTask(theirs, { createdAt: at(i) })))).id)
        }
        const { task, leaseToken } = yield* running(mine, { createdAt: at(9) })
        done(yield* store.transition(finish(task.id, leaseToken, "reconciliation_required")))

        const pages: Array<ReadonlyArray<string>> = []
        let afterId: TaskRecord["id"] | undefined
        for (;;) {
          const page = yield* store.listByStatus("queued", 4, afterId)
          if (page.length === 0) break
          expect(page.every((record) => record.status === "queued")).toBe(true)
          pages.push(page.map((record) => record.id))
          afterId = page.at(-1)?.id
        }
        expect(pages.map((page) => page.length)).toEqual([4, 2])
        expect(pages.flat()).toEqual(queued.slice().sort())
        expect((yield* store.listByStatus("reconciliation_required", 10)).map((record) => record.id)).toEqual([task.id])
        expect(yield* store.listByStatus("succeeded", 10)).toEqual([])
      })
    )
  })

  describe("TaskStore claims and leases", () => {
    test(
      "claim leases claimable tasks oldest first and counts attempts",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(10 * USD)
        const older = yield* admitted(admission(newTask(accountId, { createdAt: at(0) })))
        const newer = yield* admitted(admission(newTask(accountId, { createdAt: at(1) })))
        const claims = yield* store.claim({ workerId: "w1", limit: 1, leaseMs: 30_000, now: at(2) })
        expect(claims.map((claim) => claim.task.id)).toEqual([older.id])
        expect(claims[0]?.task.attempts).toBe(1)
        expect(claims[0]?.leaseExpiresAt).toEqual(at(32))

        const rest = yield* store.claim({ workerId: "w2", limit: 10, leaseMs: 30_000, now: at(3) })
        expect(rest.map((claim) => claim.task.id)).toEqual([newer.id])
        expect(rest[0]?.leaseToken).not.toBe(claims[0]?.leaseToken)
        expect(yield* store.claim({ workerId: "w3", limit: 10, leaseMs: 30_000, now: at(4) })).toEqual([])
      })
    )

    test(
      "claim serves only the models asked for",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(10 * USD)
        const song = yield* admitted(admission(newTask(accountId, { model: "song-lyrics" })))
        yield* admitted(admission(newTask(accountId, { model: "other-model" })))
        const claims = yield* store.claim({ workerId: "w", limit: 10, leaseMs: 1000, now: at(1), models: ["song-lyrics"] })
        expect(claims.map((claim) => claim.task.id)).toEqual([song.id])
        expect(yield* store.claim({ workerId: "w", limit: 10, leaseMs: 1000, now: at(1), models: [] })).toEqual([])
      })
    )

    test(
      "a lapsed lease is taken over and the old holder can no longer write",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(10 * USD)
        const task = yield* admitted(admission(newTask(accountId)))
        const first = defined((yield* store.claim({ workerId: "w1", limit: 1, leaseMs: 10_000, now: at(0) }))[0])
        done(
          yield* store.transition({
            taskId: task.id,
            leaseToken: first.leaseToken,
            from: "queued",
            to: "submitting",
            now: at(1),
            keepLease: true
          })
        )
        expect(yield* store.renew(task.id, first.leaseToken, at(20))).toBe(true)
        // Still held until at(20): nobody can take it.
        expect(yield* store.claim({ workerId: "w2", limit: 1, leaseMs: 10_000, now: at(15) })).toEqual([])

        const second = defined((yield* store.claim({ workerId: "w2", limit: 1, leaseMs: 10_000, now: at(21) }))[0])
        expect(second.task.id).toBe(task.id)
        expect(second.task.status).toBe("submitting")
        expect(second.task.attempts).toBe(2)
        expect(second.leaseToken).not.toBe(first.leaseToken)

        expect(yield* store.renew(task.id, first.leaseToken, at(60))).toBe(false)
        expect(
          yield* store.transition({
            taskId: task.id,
            leaseToken: first.leaseToken,
            from: "submitting",
            to: "running",
            now: at(22),
            keepLease: true
          })
        ).toEqual({ _tag: "LeaseLost" })
        expect(yield* store.renew(task.id, second.leaseToken, at(60))).toBe(true)
        done(
          yield* store.transition({
            taskId: task.id,
            leaseToken: second.leaseToken,
            from: "submitting",
            to: "running",
            now: at(23),
            keepLease: true
          })
        )
      })
    )

    test(
      "a lease renewed into the past is given up: another worker claims the task at once",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(10 * USD)
        const task = yield* admitted(admission(newTask(accountId)))
        const first = defined((yield* store.claim({ workerId: "w1", limit: 1, leaseMs: 10_000, now: at(0) }))[0])
        expect(yield* store.claim({ workerId: "w2", limit: 1, leaseMs: 10_000, now: at(1) })).toEqual([])
        expect(yield* store.renew(task.id, first.leaseToken, new Date(0))).toBe(true)
        const second = defined((yield* store.claim({ workerId: "w2", limit: 1, leaseMs: 10_000, now: at(1) }))[0])
        expect(second.task.id).toBe(task.id)
        expect(yield* store.renew(task.id, first.leaseToken, at(30))).toBe(false)
      })
    )

    test(
      "a transition is a compare-and-set on the lease and the status",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(10 * USD)
        const task = yield* admitted(admission(newTask(accountId)))
        const claim = yield* claimTask(task.id, at(0))
        const base = { taskId: task.id, now: at(1), keepLease: true } as const
        yield* expectRefused({ ...base, leaseToken: "not-the-token", from: "queued", to: "submitting" })
        yield* expectRefused({ ...base, leaseToken: claim.leaseToken, from: "submitting", to: "running" })
        yield* expectRefused({
          ...base,
          taskId: Ids.makeTaskId(),
          leaseToken: claim.leaseToken,
          from: "queued",
          to: "submitting"
        })
        expect(defined(yield* store.get(accountId, task.id)).status).toBe("queued")

        const moved = done(yield* store.transition({ ...base, leaseToken: claim.leaseToken, from: "queued", to: "submitting" }))
        expect(moved.status).toBe("submitting")
        expect(moved.updatedAt).toEqual(at(1))
      })
    )

    test(
      "transitions the state machine forbids are refused",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(10 * USD)
        const task = yield* admitted(admission(newTask(accountId)))
        const claim = yield* claimTask(task.id, at(0))
        const illegal = yield* store.transition({
          taskId: task.id,
          leaseToken: claim.leaseToken,
          from: "queued",
          to: "succeeded",
          now: at(1),
          chargeMicros: price(USD),
          keepLease: false
        })
        expect(illegal).toEqual({ _tag: "IllegalTransition", from: "queued", to: "succeeded" })
        expect(defined(yield* store.get(accountId, task.id)).status).toBe("queued")
        yield* expectBalances(accountId, { balance: 10 * USD, reserved: USD })
      })
    )

    test(
      "transitionAll judges each request on its own, in order",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(10 * USD)
        const a = yield* admitted(admission(newTask(accountId, { createdAt: at(0) })))
        const b = yield* admitted(admission(newTask(accountId, { createdAt: at(1) })))
        const claims = yield* store.claim({ workerId: "w", limit: 10, leaseMs: 60_000, now: at(2) })
        const ca = defined(claims.find((claim) => claim.task.id === a.id))
        const cb = defined(claims.find((claim) => claim.task.id === b.id))
        const results = yield* store.transitionAll([
          { taskId: a.id, leaseToken: ca.leaseToken, from: "queued", to: "submitting", now: at(3), keepLease: true },
          { taskId: b.id, leaseToken: "stale", from: "queued", to: "submitting", now: at(3), keepLease: true },
          { taskId: b.id, leaseToken: cb.leaseToken, from: "queued", to: "running", now: at(3), keepLease: true },
          { taskId: b.id, leaseToken: cb.leaseToken, from: "queued", to: "failed", now: at(3), keepLease: false }
        ])
        expect(results.map((result) => result._tag)).toEqual(["Done", "LeaseLost", "IllegalTransition", "Done"])
        expect(defined(yield* store.get(accountId, a.id)).status).toBe("submitting")
        expect(defined(yield* store.get(accountId, b.id)).status).toBe("failed")
        yield* expectBalances(accountId, { balance: 10 * USD, reserved: USD })
        expect(yield* store.transitionAll([])).toEqual([])
      })
    )
  })

  describe("TaskStore settlement", () => {
    test(
      "success charges the reservation once and keeps the assets",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const { task, leaseToken } = yield* running(accountId, { priceMicros: price(2 * USD) })
        const succeeded = done(
          yield* store.transition(
            finish(task.id, leaseToken, "succeeded", {
              chargeMicros: price(2 * USD),
              assets: [image]
            })
          )
        )
        expect(succeeded).toMatchObject({
          status: "succeeded",
          chargedMicros: 2 * USD,
          upstreamRef: "upstream-42",
          updatedAt: at(10),
          assets: [image]
        })
        yield* expectBalances(accountId, { balance: 3 * USD, reserved: 0 })

        yield* expectRefused(finish(task.id, leaseToken, "succeeded", { chargeMicros: price(2 * USD) }))
        yield* expectRefused(finish(task.id, leaseToken, "failed"))
        yield* expectBalances(accountId, { balance: 3 * USD, reserved: 0 })
        const entries = yield* entriesOfTask(accountId, task.id)
        expect(entries.map((entry) => [entry.kind, entry.amountMicros])).toEqual([
          ["charge", 2 * USD],
          ["reserve", 2 * USD]
        ])
        expect(yield* store.get(accountId, task.id)).toEqual(succeeded)
      })
    )

    test(
      "a partial charge releases the remainder in the same step",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const { task, leaseToken } = yield* running(accountId, {
          priceMicros: price(4 * 250_000),
          unitMicros: price(250_000),
          quantity: 4,
          settlement: "perDeliveredUnit"
        })
        const succeeded = done(
          yield* store.transition(
            finish(task.id, leaseToken, "succeeded", {
              chargeMicros: price(750_000)
            })
          )
        )
        expect(succeeded.chargedMicros).toBe(750_000)
        yield* expectBalances(accountId, { balance: 4_250_000, reserved: 0 })
        const kinds = (yield* entriesOfTask(accountId, task.id)).map((entry) => [entry.kind, entry.amountMicros])
        expect(kinds.slice().sort()).toEqual(
          [
            ["charge", 750_000],
            ["release", 250_000],
            ["reserve", USD]
          ].sort()
        )
      })
    )

    test(
      "a charge larger than the reservation, or a success without one, is refused",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const { task, leaseToken } = yield* running(accountId)
        const entriesBefore = yield* allEntries(accountId)
        yield* expectRefused(finish(task.id, leaseToken, "succeeded", { chargeMicros: price(USD + 1) }))
        yield* expectRefused(finish(task.id, leaseToken, "succeeded"))
        expect(defined(yield* store.get(accountId, task.id)).status).toBe("running")
        expect(yield* allEntries(accountId)).toEqual(entriesBefore)
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: USD })
        // The lease survived the refusals.
        done(yield* store.transition(finish(task.id, leaseToken, "succeeded", { chargeMicros: price(USD) })))
      })
    )

    test(
      "failure releases the reservation once",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const { task, leaseToken } = yield* running(accountId)
        const failed = done(yield* store.transition(finish(task.id, leaseToken, "failed", { errorCode: "UPSTREAM_ERROR" })))
        expect(failed).toMatchObject({ status: "failed", errorCode: "UPSTREAM_ERROR", chargedMicros: null })
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: 0 })
        yield* expectRefused(finish(task.id, leaseToken, "failed"))
        yield* expectRefused(finish(task.id, leaseToken, "succeeded", { chargeMicros: price(USD) }))
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: 0 })
        const kinds = (yield* entriesOfTask(accountId, task.id)).map((entry) => [entry.kind, entry.amountMicros])
        expect(kinds).toEqual([
          ["release", USD],
          ["reserve", USD]
        ])
      })
    )

    test(
      "reconciliation_required keeps the reservation until resolved",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const { task, leaseToken } = yield* running(accountId, { priceMicros: price(2 * USD) })
        const held = done(
          yield* store.transition(
            finish(task.id, leaseToken, "reconciliation_required", {
              errorCode: "OUTCOME_UNKNOWN"
            })
          )
        )
        expect(held).toMatchObject({ status: "reconciliation_required", errorCode: "OUTCOME_UNKNOWN" })
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: 2 * USD })
        expect(yield* store.claim({ workerId: "w", limit: 10, leaseMs: 1000, now: at(3600) })).toEqual([])
        yield* expectRefused({
          ...finish(task.id, leaseToken, "succeeded", { chargeMicros: price(USD) }),
          from: "reconciliation_required"
        })

        const resolved = defined(
          yield* store.resolve({
            taskId: task.id,
            to: "succeeded",
            now: at(20),
            chargeMicros: price(USD),
            assets: [image],
            errorCode: null
          })
        )
        expect(resolved).toMatchObject({
          status: "succeeded",
          chargedMicros: USD,
          errorCode: null,
          assets: [image],
          updatedAt: at(20)
        })
        yield* expectBalances(accountId, { balance: 4 * USD, reserved: 0 })
        expect(yield* store.resolve({ taskId: task.id, to: "failed", now: at(21) })).toBeUndefined()
        yield* expectBalances(accountId, { balance: 4 * USD, reserved: 0 })
      })
    )

    test(
      "resolve fails a held task and releases, and touches nothing else",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const { task, leaseToken } = yield* running(accountId)
        done(yield* store.transition(finish(task.id, leaseToken, "reconciliation_required")))
        const other = yield* admitted(admission(newTask(accountId, { createdAt: at(5) })))
        expect(yield* store.resolve({ taskId: other.id, to: "failed", now: at(6) })).toBeUndefined()
        expect(yield* store.resolve({ taskId: Ids.makeTaskId(), to: "failed", now: at(6) })).toBeUndefined()
        const failed = defined(yield* store.resolve({ taskId: task.id, to: "failed", now: at(7), errorCode: "UPSTREAM_LOST" }))
        expect(failed).toMatchObject({ status: "failed", errorCode: "UPSTREAM_LOST", chargedMicros: null })
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: USD })
      })
    )

    test(
      "the operator queue lists held tasks with the upstream's last answer; a resolution's note is on its entries",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const first = yield* running(accountId, { priceMicros: price(2 * USD) })
        const second = yield* running(accountId)
        const answer = `submit: 502 Bad Gateway ${"x".repeat(2000)}`
        done(
          yield* store.transition(
            finish(first.task.id, first.leaseToken, "reconciliation_required", {
              errorCode: "OUTCOME_UNKNOWN",
              upstreamAnswer: answer
            })
          )
        )
        done(yield* store.transition(finish(second.task.id, second.leaseToken, "reconciliation_required")))
        const ordered = [first.task.id, second.task.id].sort()

        const queue = yield* store.listHeld(10)
        expect(queue.map((held) => held.task.id)).toEqual(ordered)
        const firstHeld = defined(queue.find((held) => held.task.id === first.task.id))
        expect(firstHeld.upstreamAnswer).toBe(answer.slice(0, 1000))
        expect(firstHeld.task).toMatchObject({ status: "reconciliation_required", priceMicros: 2 * USD, model: first.task.model })
        expect(defined(queue.find((held) => held.task.id === second.task.id)).upstreamAnswer).toBeNull()
        expect((yield* store.listHeld(1)).map((held) => held.task.id)).toEqual([ordered[0]])
        expect((yield* store.listHeld(10, ordered[0])).map((held) => held.task.id)).toEqual([ordered[1]])

        defined(
          yield* store.resolve({
            taskId: first.task.id,
            to: "succeeded",
            now: at(20),
            chargeMicros: price(USD),
            assets: [image],
            errorCode: null,
            upstreamRef: "job-from-callback",
            note: "operator: result confirmed by the upstream's support"
          })
        )
        defined(yield* store.resolve({ taskId: second.task.id, to: "failed", now: at(21), note: "operator: never ran" }))
        expect(yield* store.listHeld(10)).toEqual([])
        expect((yield* store.get(accountId, first.task.id))?.upstreamRef).toBe("job-from-callback")
        const notes = (entries: ReadonlyArray<{ readonly kind: string; readonly note: string | null }>) =>
          entries
            .filter((entry) => entry.kind !== "reserve")
            .map((entry) => [entry.kind, entry.note])
            .sort()
        expect(notes(yield* entriesOfTask(accountId, first.task.id))).toEqual([
          ["charge", "operator: result confirmed by the upstream's support"],
          ["release", "operator: result confirmed by the upstream's support"]
        ])
        expect(notes(yield* entriesOfTask(accountId, second.task.id))).toEqual([["release", "operator: never ran"]])
        yield* expectBalances(accountId, { balance: 4 * USD, reserved: 0 })
      })
    )

    test(
      "resolve from running settles a task a worker holds, once; the worker's later write finds it moved on",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const { task, leaseToken } = yield* running(accountId, { priceMicros: price(2 * USD) })
        expect(yield* store.resolve({ taskId: task.id, to: "failed", now: at(5) })).toBeUndefined()
        expect(yield* store.resolve({ taskId: task.id, from: "submitting", to: "failed", now: at(5) })).toBeUndefined()
        const resolved = defined(
          yield* store.resolve({
            taskId: task.id,
            from: "running",
            to: "succeeded",
            now: at(6),
            chargeMicros: price(USD),
            assets: [image],
            errorCode: null,
            note: "provider callback: upstream job upstream-42 succeeded"
          })
        )
        expect(resolved).toMatchObject({ status: "succeeded", chargedMicros: USD, upstreamRef: "upstream-42" })
        expect(yield* store.resolve({ taskId: task.id, from: "running", to: "failed", now: at(7) })).toBeUndefined()
        expect((yield* store.transition(finish(task.id, leaseToken, "failed")))._tag).not.toBe("Done")
        expect(yield* store.renew(task.id, leaseToken, at(100))).toBe(false)
        yield* expectBalances(accountId, { balance: 4 * USD, reserved: 0 })
        expect((yield* entriesOfTask(accountId, task.id)).map((entry) => [entry.kind, entry.amountMicros]).sort()).toEqual([
          ["charge", USD],
          ["release", USD],
          ["reserve", 2 * USD]
        ])
      })
    )

    test(
      "noteUpstream records the job of a submitting or held task that has none, once, and nothing else",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const queued = yield* admitted(admission(newTask(accountId)))
        expect(yield* store.noteUpstream(queued.id, "job-1")).toBe(false)
        const claim = yield* claimTask(queued.id, at(1))
        done(
          yield* store.transition({
            taskId: queued.id,
            leaseToken: claim.leaseToken,
            from: "queued",
            to: "submitting",
            now: at(2),
            keepLease: true
          })
        )
        expect(yield* store.noteUpstream(queued.id, "job-1")).toBe(true)
        expect(yield* store.noteUpstream(queued.id, "job-2")).toBe(false)
        expect(defined(yield* store.get(accountId, queued.id))).toMatchObject({ status: "submitting", upstreamRef: "job-1" })
        // The lease is untouched: its holder carries on.
        expect(yield* store.renew(queued.id, claim.leaseToken, at(60))).toBe(true)

        done(
          yield* store.transition({
            taskId: queued.id,
            leaseToken: claim.leaseToken,
            from: "submitting",
            to: "reconciliation_required",
            now: at(3),
            keepLease: false
          })
        )
        expect(defined(yield* store.get(accountId, queued.id)).upstreamRef).toBe("job-1")

        const held = yield* admitted(admission(newTask(accountId, { createdAt: at(4) })))
        const heldClaim = yield* claimTask(held.id, at(5))
        for (const [from, to] of [
          ["queued", "submitting"],
          ["submitting", "reconciliation_required"]
        ] as const) {
          done(
            yield* store.transition({ taskId: held.id, leaseToken: heldClaim.leaseToken, from, to, now: at(6), keepLease: true })
          )
        }
        expect(yield* store.noteUpstream(held.id, "job-5")).toBe(true)
        expect(defined(yield* store.get(accountId, held.id))).toMatchObject({
          status: "reconciliation_required",
          upstreamRef: "job-5"
        })

        // A running task has its job already; a finished one is left alone.
        const { task, leaseToken } = yield* running(accountId, { createdAt: at(7) })
        expect(yield* store.noteUpstream(task.id, "job-3")).toBe(false)
        done(yield* store.transition(finish(task.id, leaseToken, "failed")))
        expect(yield* store.noteUpstream(task.id, "job-3")).toBe(false)
        expect(yield* store.noteUpstream(Ids.makeTaskId(), "job-4")).toBe(false)
        expect(defined(yield* store.get(accountId, task.id)).upstreamRef).toBe("upstream-42")
      })
    )

    test(
      "resolving with a charge above the reservation is refused",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(5 * USD)
        const { task, leaseToken } = yield* running(accountId)
        done(yield* store.transition(finish(task.id, leaseToken, "reconciliation_required")))
        const exit = yield* Effect.exit(
          store.resolve({ taskId: task.id, to: "succeeded", now: at(20), chargeMicros: price(USD + 1) })
        )
        if (Exit.isSuccess(exit)) expect(exit.value).toBeUndefined()
        expect(defined(yield* store.get(accountId, task.id)).status).toBe("reconciliation_required")
        yield* expectBalances(accountId, { balance: 5 * USD, reserved: USD })
      })
    )
  })

  describe("TaskStore.awaitWork", () => {
    test(
      "returns after its wait when nothing happens",
      Effect.gen(function* () {
        yield* (yield* TaskStore).awaitWork(20)
      })
    )

    test(
      "wakes up on an admission",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const accountId = yield* fundedAccount(USD)
        const waiting = yield* Effect.forkChild(store.awaitWork(600_000))
        yield* Effect.sleep("50 millis")
        yield* admitted(admission(newTask(accountId)))
        yield* Fiber.join(waiting).pipe(Effect.timeout("10 seconds"))
      })
    )
  })
}
