import { Effect } from "effect"
import { describe, expect, it } from "@effect/vitest"
import type { AccountId } from "../../src/domain/Ids.ts"
import { MediaStore } from "../../src/media/MediaStore.ts"
import * as Reconciler from "../../src/tasks/Reconciler.ts"
import * as ErrorCode from "../../src/domain/TaskErrorCode.ts"
import { TaskStore } from "../../src/tasks/TaskStore.ts"
import type { NewTask, TaskRecord } from "../../src/tasks/TaskStore.ts"
import { entriesOfTask, expectBalances, expectBooksBalance, fundedAccount, USD } from "../../src/testing/Fixtures.ts"
import type { FakeScript } from "./TaskWorkerSupport.ts"
import { admitTask, fakeProvider, png, read, services, upstreamError, waitForStatus } from "./TaskWorkerSupport.ts"

/** A task whose worker sent it and lost the answer: in reconciliation_required, reservation held. */
const inReconciliation = (
  accountId: AccountId,
  options: { readonly upstreamRef?: string; readonly task?: Partial<NewTask> } = {}
) =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    const { task } = yield* admitTask(options.task ?? {}, accountId)
    const claims = yield* store.claim({ workerId: "w", limit: 100, leaseMs: 60_000, now: new Date() })
    const claim = claims.find((c) => c.task.id === task.id)!
    const step = (from: TaskRecord["status"], to: TaskRecord["status"], upstreamRef?: string) =>
      Effect.map(
        store.transition({
          taskId: task.id,
          leaseToken: claim.leaseToken,
          from,
          to,
          now: new Date(),
          keepLease: to !== "reconciliation_required",
          errorCode: to === "reconciliation_required" ? ErrorCode.OutcomeUnknown : undefined,
          upstreamRef
        }),
        (result) => expect(result._tag).toBe("Done")
      )
    yield* step("queued", "submitting")
    if (options.upstreamRef === undefined) {
      yield* step("submitting", "reconciliation_required")
    } else {
      yield* step("submitting", "running", options.upstreamRef)
      yield* step("running", "reconciliation_required")
    }
    return task
  })

const withFake = (script: FakeScript) => {
  const fake = fakeProvider(script)
  return { fake, layer: services([fake.adapter]) }
}

const reconcileAll = (options: Reconciler.Options = {}) =>
  Effect.flatMap(Reconciler.make(options), (reconciler) => reconciler.reconcileAll)

describe("Reconciler", () => {
  it.live("settles a task whose upstream job succeeded: results stored, charged once", () => {
    const { fake, layer } = withFake({ lookup: [{ upstreamId: "job-3" }], poll: [{ _tag: "Succeeded", outputs: [png()] }] })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(10 * USD)
      const task = yield* inReconciliation(accountId)
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: USD })

      expect(yield* reconcileAll()).toEqual({ examined: 1, succeeded: 1, failed: 0, left: 0 })
      const done = yield* read(accountId, task.id)
      expect(done).toMatchObject({ status: "succeeded", chargedMicros: USD, errorCode: null })
      expect(fake.calls.lookup).toEqual([{ model: task.model, reference: task.id }])
      expect(fake.calls.poll).toEqual([{ model: task.model, upstreamId: "job-3", reference: task.id }])
      expect(fake.calls.submit).toHaveLength(0)
      const result = yield* MediaStore.use((media) => media.getResult(accountId, done.assets[0]!.resultId!))
      expect(result?.taskId).toBe(task.id)
      yield* expectBalances(accountId, { balance: 9 * USD, reserved: 0 })

      expect(yield* reconcileAll()).toEqual({ examined: 0, succeeded: 0, failed: 0, left: 0 })
      expect((yield* entriesOfTask(accountId, task.id)).filter((entry) => entry.kind === "charge")).toHaveLength(1)
      yield* expectBooksBalance
    }).pipe(Effect.provide(layer))
  })

  it.live("fails a task whose result link the address policy refuses, charging nothing", () => {
    const { layer } = withFake({
      lookup: [{ upstreamId: "job-5" }],
      poll: [
        {
          _tag: "Succeeded",
          outputs: [{ type: "image", url: "https://169.254.169.254/latest/meta-data/iam", contentType: "image/png" }]
        }
      ]
    })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(10 * USD)
      const task = yield* inReconciliation(accountId)
      expect(yield* reconcileAll()).toEqual({ examined: 1, succeeded: 0, failed: 1, left: 0 })
      expect(yield* read(accountId, task.id)).toMatchObject({ status: "failed", errorCode: ErrorCode.ResultUrlRefused })
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: 0 })
    }).pipe(Effect.provide(layer))
  })

  it.live("releases a task whose upstream job failed, with the upstream's code", () => {
    const { layer } = withFake({
      lookup: [{ upstreamId: "job-4" }],
      poll: [{ _tag: "Failed", errorCode: "UPSTREAM_CONTENT_POLICY", message: "no" }]
    })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(10 * USD)
      const task = yield* inReconciliation(accountId)
      expect(yield* reconcileAll()).toEqual({ examined: 1, succeeded: 0, failed: 1, left: 0 })
      expect(yield* read(accountId, task.id)).toMatchObject({ status: "failed", errorCode: "UPSTREAM_CONTENT_POLICY" })
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: 0 })
    }).pipe(Effect.provide(layer))
  })

  it.live("polls a known upstream job directly, even where the adapter cannot look jobs up", () => {
    const { fake, layer } = withFake({ poll: [{ _tag: "Succeeded", outputs: [png()] }] })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(10 * USD)
      const task = yield* inReconciliation(accountId, { upstreamRef: "job-known" })
      expect((yield* reconcileAll()).succeeded).toBe(1)
      expect(fake.calls.poll.map((call) => call.upstreamId)).toEqual(["job-known"])
      expect((yield* read(accountId, task.id)).status).toBe("succeeded")
    }).pipe(Effect.provide(layer))
  })

  it.live("keeps the job a callback names while it runs, and a later pass settles the task by itself", () => {
    const { fake, layer } = withFake({ poll: [{ _tag: "Pending" }, { _tag: "Succeeded", outputs: [png()] }] })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(10 * USD)
      const task = yield* inReconciliation(accountId)
      const reconciler = yield* Reconciler.make()
      expect((yield* reconciler.reconcile(yield* read(accountId, task.id), "job-called-back"))._tag).toBe("Pending")
      expect(yield* read(accountId, task.id)).toMatchObject({
        status: "reconciliation_required",
        upstreamRef: "job-called-back"
      })
      // A callback naming another job than the one now known is refused.
      expect((yield* reconciler.reconcile(yield* read(accountId, task.id), "job-other"))._tag).toBe("OtherJob")

      expect(yield* reconciler.reconcileAll).toEqual({ examined: 1, succeeded: 1, failed: 0, left: 0 })
      expect(fake.calls.poll.map((call) => call.upstreamId)).toEqual(["job-called-back", "job-called-back"])
      const notes = (yield* entriesOfTask(accountId, task.id)).filter((e) => e.kind === "charge").map((e) => e.note)
      expect(notes).toEqual(["reconciler: upstream job job-called-back succeeded"])
      yield* expectBooksBalance
    }).pipe(Effect.provide(layer))
  })

  it.live("leaves a task it cannot look up to an operator, reservation kept", () => {
    const { fake, layer } = withFake({})
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(10 * USD)
      const task = yield* inReconciliation(accountId)
      const reconciler = yield* Reconciler.make()
      expect((yield* reconciler.reconcile(yield* read(accountId, task.id)))._tag).toBe("NeedsOperator")
      expect(yield* reconciler.reconcileAll).toEqual({ examined: 1, succeeded: 0, failed: 0, left: 1 })
      expect(fake.calls.poll).toHaveLength(0)
      expect((yield* read(accountId, task.id)).status).toBe("reconciliation_required")
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: USD })
    }).pipe(Effect.provide(layer))
  })

  it.live("releases a task the upstream never received, once that answer has held long enough", () => {
    const { layer } = withFake({ lookup: [undefined] })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(10 * USD)
      const task = yield* inReconciliation(accountId)
      expect((yield* reconcileAll({ notFoundAfterMs: 60_000 })).left).toBe(1)
      expect((yield* read(accountId, task.id)).status).toBe("reconciliation_required")

      yield* Effect.sleep(30)
      expect((yield* reconcileAll({ notFoundAfterMs: 20 })).failed).toBe(1)
      expect(yield* read(accountId, task.id)).toMatchObject({ status: "failed", errorCode: ErrorCode.NeverReceived })
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: 0 })
    }).pipe(Effect.provide(layer))
  })

  it.live("waits for a job still running, and fails it once its deadline has passed", () => {
    const { fake, layer } = withFake({ lookup: [{ upstreamId: "job-slow" }], poll: [{ _tag: "Pending" }], cancel: true })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(10 * USD)
      const patient = yield* inReconciliation(accountId)
      const late = yield* inReconciliation(accountId, { task: { deadlineAt: new Date(Date.now() + 40) } })
      expect(yield* reconcileAll()).toEqual({ examined: 2, succeeded: 0, failed: 0, left: 2 })
      yield* Effect.sleep(50)
      expect(yield* reconcileAll()).toEqual({ examined: 2, succeeded: 0, failed: 1, left: 1 })
      expect(yield* read(accountId, late.id)).toMatchObject({ status: "failed", errorCode: ErrorCode.DeadlineExceeded })
      expect((yield* read(accountId, patient.id)).status).toBe("reconciliation_required")
      expect(fake.calls.cancel).toEqual([{ model: late.model, upstreamId: "job-slow" }])
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: USD })
    }).pipe(Effect.provide(layer))
  })

  it.live("leaves a task for the next pass when the upstream cannot be reached", () => {
    const { layer } = withFake({ lookup: [upstreamError("Retryable", { status: 503 })] })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(10 * USD)
      const task = yield* inReconciliation(accountId)
      const outcome = yield* (yield* Reconciler.make()).reconcile(yield* read(accountId, task.id))
      expect(outcome._tag).toBe("Unreachable")
      expect((yield* read(accountId, task.id)).status).toBe("reconciliation_required")
    }).pipe(Effect.provide(layer))
  })

  it.live("changes nothing when an operator resolved the task first", () => {
    const { layer } = withFake({ lookup: [{ upstreamId: "job-5" }], poll: [{ _tag: "Succeeded", outputs: [png()] }] })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(10 * USD)
      const task = yield* inReconciliation(accountId)
      const stale = yield* read(accountId, task.id)
      yield* TaskStore.use((store) =>
        store.resolve({ taskId: task.id, to: "failed", now: new Date(), errorCode: "OPERATOR_RELEASED" })
      )
      const outcome = yield* (yield* Reconciler.make()).reconcile(stale)
      expect(outcome._tag).toBe("Skipped")
      expect(yield* read(accountId, task.id)).toMatchObject({ status: "failed", errorCode: "OPERATOR_RELEASED" })
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: 0 })
    }).pipe(Effect.provide(layer))
  })

  it.live("walks every page of tasks awaiting reconciliation", () => {
    const { layer } = withFake({ lookup: [{ upstreamId: "job" }], poll: [{ _tag: "Succeeded", outputs: [png()] }] })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(10 * USD)
      for (let i = 0; i < 5; i++) yield* inReconciliation(accountId)
      expect(yield* reconcileAll({ pageSize: 2 })).toEqual({ examined: 5, succeeded: 5, failed: 0, left: 0 })
      yield* expectBalances(accountId, { balance: 5 * USD, reserved: 0 })
    }).pipe(Effect.provide(layer))
  })

  it.live("runs passes periodically in the background", () => {
    const { layer } = withFake({ lookup: [{ upstreamId: "job" }], poll: [{ _tag: "Succeeded", outputs: [png()] }] })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(10 * USD)
      yield* Effect.forkScoped(Reconciler.run({ intervalMs: 10 }))
      yield* Effect.sleep(30)
      const task = yield* inReconciliation(accountId)
      yield* waitForStatus(accountId, task.id, "succeeded")
    }).pipe(Effect.provide(layer))
  })
})
