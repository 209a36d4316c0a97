import { Clock, Deferred, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "@effect/vitest"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as Catalog from "../../src/catalog/Catalog.ts"
import * as Executors from "../../src/tasks/Executors.ts"
import * as Housekeeping from "../../src/tasks/Housekeeping.ts"
import type { ResultId } from "../../src/domain/Ids.ts"
import { MediaStore } from "../../src/media/MediaStore.ts"
import * as MediaUrls from "../../src/media/MediaUrls.ts"
import { StoreUnavailable } from "../../src/domain/StoreError.ts"
import * as ErrorCode from "../../src/domain/TaskErrorCode.ts"
import * as TaskWorker from "../../src/tasks/TaskWorker.ts"
import { TaskStore } from "../../src/tasks/TaskStore.ts"
import type { Claim, TaskRecord, TransitionResult } from "../../src/tasks/TaskStore.ts"
import { entriesOfTask, expectBalances, expectBooksBalance, fundedAccount, USD } from "../../src/testing/Fixtures.ts"
import {
  admitTask,
  fakeProvider,
  fast,
  png,
  read,
  SECRET,
  services,
  storedFile,
  waitFor,
  waitForStatus
} from "./TaskWorkerSupport.ts"

const finished = (task: TaskRecord) => task.status === "succeeded" || task.status === "failed"

/** Plays a worker that claims the task with a short lease, takes it to `upTo`, then dies. */
const dyingWorker = (upTo: "submitting" | "running", upstreamId = "job-1") =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    const claims = yield* store.claim({ workerId: "dying", limit: 10, leaseMs: 50, now: new Date() })
    expect(claims).toHaveLength(1)
    const claim = claims[0]!
    const step = (from: TaskRecord["status"], to: TaskRecord["status"], extra: { upstreamRef?: string } = {}) =>
      store.transition({
        taskId: claim.task.id,
        leaseToken: claim.leaseToken,
        from,
        to,
        now: new Date(),
        keepLease: true,
        ...extra
      })
    expect((yield* step("queued", "submitting"))._tag).toBe("Done")
    if (upTo === "running") expect((yield* step("submitting", "running", { upstreamRef: upstreamId }))._tag).toBe("Done")
    // Its lease lapses.
    yield* Effect.sleep(80)
    return claim
  })

describe("TaskWorker recovery", () => {
  it.live("takes over a lapsed lease, resumes polling, and refuses the first worker's late write", () => {
    const fake = fakeProvider({ poll: [{ _tag: "Pending" }, { _tag: "Succeeded", outputs: [png()] }] })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      const first: Claim = yield* dyingWorker("running", "job-1")
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitForStatus(accountId, task.id, "succeeded")
      expect(done.upstreamRef).toBe("job-1")
      expect(done.attempts).toBe(2)
      expect(fake.calls.submit).toHaveLength(0)
      expect(fake.calls.poll.every((call) => call.upstreamId === "job-1")).toBe(true)

      // The first worker wakes up and tries to record an outcome of its own.
      const store = yield* TaskStore
      for (const to of ["failed", "succeeded"] as const) {
        const late = yield* store.transition({
          taskId: task.id,
          leaseToken: first.leaseToken,
          from: "running",
          to,
          now: new Date(),
          chargeMicros: to === "succeeded" ? task.priceMicros : undefined,
          keepLease: false
        })
        expect(late._tag).toBe("LeaseLost")
      }
      expect((yield* read(accountId, task.id)).status).toBe("succeeded")
      yield* expectBalances(accountId, { balance: 9 * USD, reserved: 0 })
      expect((yield* entriesOfTask(accountId, task.id)).filter((entry) => entry.kind === "charge")).toHaveLength(1)
      yield* expectBooksBalance
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("resumes a task left in submitting by finding its upstream job, without sending it again", () => {
    const fake = fakeProvider({ lookup: [{ upstreamId: "job-found" }] })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* dyingWorker("submitting")
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done).toMatchObject({ status: "succeeded", upstreamRef: "job-found" })
      expect(fake.calls.lookup).toEqual([{ model: task.model, reference: task.id }])
      expect(fake.calls.submit).toHaveLength(0)
      yield* expectBalances(accountId, { balance: 9 * USD, reserved: 0 })
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("follows the job a callback named for a task left in submitting, with no lookup and no second submit", () => {
    const fake = fakeProvider({ poll: [{ _tag: "Pending" }, { _tag: "Succeeded", outputs: [png()] }] })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* dyingWorker("submitting")
      expect(yield* TaskStore.use((store) => store.noteUpstream(task.id, "job-called-back"))).toBe(true)
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done).toMatchObject({ status: "succeeded", upstreamRef: "job-called-back" })
      expect(fake.calls.submit).toHaveLength(0)
      expect(fake.calls.poll.every((call) => call.upstreamId === "job-called-back")).toBe(true)
      yield* expectBalances(accountId, { balance: 9 * USD, reserved: 0 })
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("holds a task left in submitting, when nothing can find its job, with why on record", () => {
    const fake = fakeProvider({})
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* dyingWorker("submitting")
      yield* Effect.forkScoped(TaskWorker.run(fast))
      yield* waitForStatus(accountId, task.id, "reconciliation_required")
      const held = (yield* TaskStore.use((store) => store.listHeld(10))).find((h) => h.task.id === task.id)
      expect(held?.upstreamAnswer).toMatch(/^a worker stopped while submitting; .* cannot look jobs up by reference$/)
      expect(fake.calls.submit).toHaveLength(0)
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("sends a task left in submitting when the upstream's lookup says it never arrived", () => {
    const fake = fakeProvider({ lookup: [undefined] })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* dyingWorker("submitting")
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done.status).toBe("succeeded")
      expect(fake.calls.lookup).toHaveLength(1)
      expect(fake.calls.submit.map((call) => call.reference)).toEqual([task.id])
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("sends a task left in submitting to reconciliation when its upstream cannot be searched", () => {
    const fake = fakeProvider({})
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* dyingWorker("submitting")
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitForStatus(accountId, task.id, "reconciliation_required")
      expect(done.errorCode).toBe(ErrorCode.OutcomeUnknown)
      expect(fake.calls.submit).toHaveLength(0)
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: USD })
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("stops working on a task whose lease renewal is refused, writing nothing", () => {
    const fake = fakeProvider({ poll: [{ _tag: "Pending" }] })
    // A store where the lease is taken away at the first renewal, and nothing is offered twice.
    let renewals = 0
    const stolen = Layer.effect(
      TaskStore,
      Effect.gen(function* () {
        const store = yield* TaskStore
        let offered = false
        return TaskStore.of({
          ...store,
          claim: (options) =>
            offered
              ? Effect.succeed([])
              : Effect.map(store.claim(options), (claims) => {
                  offered = claims.length > 0
                  return claims
                }),
          renew: () =>
            Effect.sync(() => {
              renewals++
              return false
            })
        })
      })
    ).pipe(Layer.provideMerge(MemoryStore.layer))
    const layer = Layer.mergeAll(
      stolen,
      Catalog.layer,
      Executors.layer({ adapters: [fake.adapter] }),
      MediaUrls.layer({ baseUrl: "https://api.test", secret: SECRET })
    )
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* Effect.forkScoped(TaskWorker.run({ ...fast, leaseMs: 90 }))
      yield* waitForStatus(accountId, task.id, "running")
      // Once the renewal has been refused (however late a busy machine runs it), polling stops.
      while (renewals === 0) yield* Effect.sleep(5)
      yield* Effect.sleep(20)
      const polls = fake.calls.poll.length
      yield* Effect.sleep(100)
      expect(fake.calls.poll.length).toBe(polls)
      expect((yield* read(accountId, task.id)).status).toBe("running")
    }).pipe(Effect.provide(layer))
  })

  it.live(
    "a worker that loses its task while storing outputs leaves orphans, which housekeeping sweeps after the grace period",
    () => {
      const fake = fakeProvider({
        poll: [
          { _tag: "Succeeded", outputs: [png(1)] },
          { _tag: "Succeeded", outputs: [png(2)] }
        ]
      })
      // The first worker cannot renew its lease (cut off from the store), and its first result
      // record waits for the test: the second worker takes the task over meanwhile.
      const firstLeases = new Set<string>()
      const stalled = Deferred.makeUnsafe<ResultId>()
      const release = Deferred.makeUnsafe<void>()
      const firstWrite = Deferred.makeUnsafe<TransitionResult["_tag"]>()
      const stores = Layer.mergeAll(
        Layer.effect(
          TaskStore,
          Effect.gen(function* () {
            const store = yield* TaskStore
            return TaskStore.of({
              ...store,
              claim: (options) =>
                Effect.tap(store.claim(options), (claims) =>
                  Effect.sync(() => {
                    if (options.workerId === "first") for (const claim of claims) firstLeases.add(claim.leaseToken)
                  })
                ),
              renew: (taskId, leaseToken, until) =>
                firstLeases.has(leaseToken)
                  ? Effect.fail(new StoreUnavailable({ message: "cut off" }))
                  : store.renew(taskId, leaseToken, until),
              transitionAll: (requests) =>
                Effect.tap(store.transitionAll(requests), (results) =>
                  Effect.sync(() =>
                    requests.forEach((request, i) => {
                      if (firstLeases.has(request.leaseToken) && request.to === "succeeded") {
                        Deferred.doneUnsafe(firstWrite, Effect.succeed(results[i]!._tag))
                      }
                    })
                  )
                )
            })
          })
        ),
        Layer.effect(
          MediaStore,
          Effect.gen(function* () {
            const media = yield* MediaStore
            let first = true
            return MediaStore.of({
              ...media,
              putResult: (record) =>
                Effect.suspend(() => {
                  if (!first) return media.putResult(record)
                  first = false
                  return Deferred.succeed(stalled, record.id).pipe(
                    Effect.andThen(Deferred.await(release)),
                    Effect.andThen(media.putResult(record))
                  )
                })
            })
          })
        )
      ).pipe(Layer.provideMerge(MemoryStore.layer))
      const layer = Layer.mergeAll(
        stores,
        Catalog.layer,
        Executors.layer({ adapters: [fake.adapter] }),
        MediaUrls.layer({ baseUrl: "https://api.test", secret: SECRET })
      )
      return Effect.gen(function* () {
        const { accountId, task } = yield* admitTask()
        // One task at a time, so that the first worker cannot claim the task back itself.
        yield* Effect.forkScoped(TaskWorker.run({ ...fast, leaseMs: 200, workerId: "first", maxTasks: 1 }))
        const lost = yield* Deferred.await(stalled)
        yield* Effect.forkScoped(TaskWorker.run({ ...fast, leaseMs: 200, workerId: "second" }))
        const done = yield* waitForStatus(accountId, task.id, "succeeded")
        const won = done.assets[0]!.resultId!
        expect(done.attempts).toBe(2)

        yield* Deferred.succeed(release, undefined)
        expect(yield* Deferred.await(firstWrite)).toBe("LeaseLost")
        expect(yield* read(accountId, task.id)).toEqual(done)
        yield* expectBalances(accountId, { balance: 9 * USD, reserved: 0 })
        expect(yield* storedFile(lost)).toEqual([...png(1).bytes!])
        expect(yield* MediaStore.use((media) => media.getResult(accountId, lost))).toMatchObject({ taskId: task.id })

        // Within the grace period nothing goes; past it, exactly the loser's file.
        expect(yield* Housekeeping.sweepOrphanResults()).toEqual({ records: 0, removed: 0 })
        const anHourOn = yield* TestClock.make()
        yield* anHourOn.setTime(Date.now() + Housekeeping.defaults.orphanResultGraceMs + 1_000)
        expect(yield* Housekeeping.sweepOrphanResults().pipe(Effect.provideService(Clock.Clock, anHourOn))).toEqual({
          records: 1,
          removed: 1
        })
        expect(yield* MediaStore.use((media) => media.getResult(accountId, lost))).toBeUndefined()
        expect(yield* storedFile(lost)).toBeUndefined()
        expect(yield* MediaStore.use((media) => media.getResult(accountId, won))).toMatchObject({ taskId: task.id })
        expect(yield* storedFile(won)).toEqual([...png(2).bytes!])
      }).pipe(Effect.provide(layer))
    }
  )

  it.live("two workers draining one queue run each task exactly once", () => {
    const submitted = new Map<string, number>()
    const fake = fakeProvider({
      submit: [
        (call) =>
          Effect.sync(() => {
            const reference = fake.calls.submit[call]!.reference
            submitted.set(reference, (submitted.get(reference) ?? 0) + 1)
            return { _tag: "Accepted", upstreamId: `job-${reference}` } as const
          })
      ],
      poll: [
        (call) =>
          Effect.succeed(
            fake.calls.poll[call]!.reference.endsWith("0")
              ? ({ _tag: "Failed", errorCode: "UPSTREAM_FAILED", message: "no" } as const)
              : ({ _tag: "Succeeded", outputs: [png()] } as const)
          )
      ]
    })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(300 * USD)
      const ids: Array<TaskRecord["id"]> = []
      for (let i = 0; i < 200; i++) ids.push((yield* admitTask({}, accountId)).task.id)
      yield* Effect.forkScoped(TaskWorker.run({ ...fast, workerId: "one", claimBatch: 7 }))
      yield* Effect.forkScoped(TaskWorker.run({ ...fast, workerId: "two", claimBatch: 5 }))
      const tasks = yield* Effect.forEach(ids, (id) => waitFor(accountId, id, finished, 20_000))

      expect([...submitted.values()].every((count) => count === 1)).toBe(true)
      expect(submitted.size).toBe(200)
      const succeeded = tasks.filter((task) => task.status === "succeeded").length
      expect(succeeded).toBe(tasks.filter((task) => !task.id.endsWith("0")).length)
      for (const task of tasks) {
        const kinds = (yield* entriesOfTask(accountId, task.id)).map((entry) => entry.kind).sort()
        expect(kinds).toEqual(task.status === "succeeded" ? ["charge", "reserve"] : ["release", "reserve"])
      }
      yield* expectBalances(accountId, { balance: 300 * USD - succeeded * USD, reserved: 0 })
    }).pipe(Effect.provide(services([fake.adapter])))
  })
})
