import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TaskStore } from "@taskmeter/kernel"
import type { Ids } from "@taskmeter/kernel"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const cancel = (who: T.Customer, id: string) =>
  T.call(`/api/v1/jobs/${id}/cancel`, { method: "POST", headers: T.bearer(who.secret) })

/** Plays a worker: claims the task and moves it to running; returns the lease to finish it with. */
const running = (taskId: string) =>
  Effect.gen(function* () {
    const tasks = yield* TaskStore.TaskStore
    const now = new Date()
    const claims = yield* tasks.claim({ workerId: "test-worker", limit: 1000, leaseMs: 60_000, now })
    const claim = claims.find((candidate) => candidate.task.id === taskId)
    if (claim === undefined) throw new Error(`task ${taskId} is not claimable`)
    const base = { taskId: claim.task.id as Ids.TaskId, leaseToken: claim.leaseToken, now, keepLease: true }
    yield* tasks.transition({ ...base, from: "queued", to: "submitting" })
    yield* tasks.transition({ ...base, from: "submitting", to: "running", upstreamRef: "up-1" })
    return (to: "failed" | "succeeded", errorCode: string | null) =>
      tasks.transition({
        ...base,
        from: "running",
        to,
        errorCode,
        keepLease: false,
        ...(to === "succeeded" ? { chargeMicros: claim.task.priceMicros } : {})
      })
  })

for (const store of stores) {
  layer(T.layer(store), { excludeTestServices: true })(`task cancel over ${store.name}`, (it) => {
    describe("POST /api/v1/jobs/{id}/cancel", () => {
      it.effect("fails a queued task CANCELED with 200 and releases its reservation; a repeat answers the same", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const { body: task } = yield* T.submit(who)
          const reply = yield* cancel(who, task.id)
          expect(reply.status).toBe(200)
          expect(reply.body).toMatchObject({ id: task.id, status: "failed", errorCode: "CANCELED", assets: [] })
          const usage = yield* T.usage(who)
          expect(usage.body).toMatchObject({ reservedMicros: 0, balanceMicros: 10_000_000 })
          expect(usage.body.entries.map((entry: { kind: string }) => entry.kind).sort()).toEqual(["grant", "release", "reserve"])
          const again = yield* cancel(who, task.id)
          expect([again.status, again.body]).toEqual([200, reply.body])
          const polled = yield* T.call(`/api/v1/jobs/${task.id}`, { headers: T.bearer(who.secret) })
          expect(polled.body).toEqual(reply.body)
        })
      )

      it.effect("asks the worker to cancel a running task: 202, reservation held until it settles", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const { body: task } = yield* T.submit(who)
          const finish = yield* running(task.id)
          const reply = yield* cancel(who, task.id)
          expect(reply.status).toBe(202)
          expect(reply.body).toMatchObject({ id: task.id, status: "running", errorCode: null })
          const again = yield* cancel(who, task.id)
          expect([again.status, again.body]).toEqual([202, reply.body])
          expect((yield* T.usage(who)).body.reservedMicros).toBe(T.MODEL_PRICE)
          yield* finish("failed", "CANCELED")
          const settled = yield* cancel(who, task.id)
          expect(settled.status).toBe(200)
          expect(settled.body).toMatchObject({ status: "failed", errorCode: "CANCELED" })
          expect((yield* T.usage(who)).body.reservedMicros).toBe(0)
        })
      )

      it.effect("answers 409 TASK_NOT_CANCELABLE for a task that finished otherwise, changing nothing", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const { body: succeeded } = yield* T.submit(who)
          yield* T.succeedWithResult(who, succeeded.id, T.PNG)
          const { body: failed } = yield* T.submit(who)
          yield* (yield* running(failed.id))("failed", "UPSTREAM_FAILED")
          const before = (yield* T.usage(who)).body
          for (const id of [succeeded.id, failed.id]) {
            const reply = yield* cancel(who, id)
            expect(reply.status).toBe(409)
            expect(reply.body.code).toBe("TASK_NOT_CANCELABLE")
            expect(reply.body.error).toContain("already")
          }
          expect((yield* T.usage(who)).body).toEqual(before)
        })
      )

      it.effect("answers 404 JOB_NOT_FOUND for another account's task, an unknown id and a malformed id", () =>
        Effect.gen(function* () {
          const owner = yield* T.customer()
          const stranger = yield* T.customer()
          const { body: task } = yield* T.submit(owner)
          for (const id of [task.id, "task_00000000-0000-4000-8000-000000000000", "not-an-id"]) {
            const reply = yield* cancel(stranger, id)
            expect(reply.status).toBe(404)
            expect(reply.body.code).toBe("JOB_NOT_FOUND")
          }
          const polled = yield* T.call(`/api/v1/jobs/${task.id}`, { headers: T.bearer(owner.secret) })
          expect(polled.body.status).toBe("queued")
        })
      )

      it.effect("needs scope jobs:create: a read-only key gets 403 INSUFFICIENT_SCOPE", () =>
        Effect.gen(function* () {
          const owner = yield* T.customer()
          const { body: task } = yield* T.submit(owner)
          const reader = yield* T.customer(10_000_000, { scopes: ["jobs:read"] })
          const reply = yield* cancel(reader, task.id)
          expect(reply.status).toBe(403)
          expect(reply.body.code).toBe("INSUFFICIENT_SCOPE")
          const anonymous = yield* T.call(`/api/v1/jobs/${task.id}/cancel`, { method: "POST" })
          expect(anonymous.status).toBe(401)
        })
      )
    })
  })
}
