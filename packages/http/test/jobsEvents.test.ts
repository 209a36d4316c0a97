import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { EventSource } from "eventsource"
import { TaskStore } from "@taskmeter/kernel"
import * as Reader from "./support/EventStreamReader.ts"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const eventsPath = (id: string) => `/api/v1/jobs/${id}/events`

const open = (who: T.Customer, id: string, headers: Record<string, string> = {}) =>
  Effect.flatMap(T.baseUrl, (base) =>
    Effect.promise(() => Reader.open(`${base}${eventsPath(id)}`, { ...T.bearer(who.secret), ...headers }))
  )

const promise = <A>(evaluate: () => Promise<A>) => Effect.promise(evaluate)

/** Plays the worker: claims the task and moves it along `path` from queued. */
const moveAlong = (taskId: string, path: ReadonlyArray<TaskStore.TaskRecord["status"]>) =>
  Effect.gen(function* () {
    const tasks = yield* TaskStore.TaskStore
    const claims = yield* tasks.claim({ workerId: "test-worker", limit: 1000, leaseMs: 60_000, now: new Date() })
    const claim = claims.find((candidate) => candidate.task.id === taskId)
    if (claim === undefined) throw new Error(`task ${taskId} is not claimable`)
    let from: TaskStore.TaskRecord["status"] = "queued"
    const mover = {
      to: (to: TaskStore.TaskRecord["status"]) =>
        Effect.gen(function* () {
          const done = yield* tasks.transition({
            taskId: claim.task.id,
            leaseToken: claim.leaseToken,
            from,
            to,
            now: new Date(),
            keepLease: true,
            ...(to === "running" ? { upstreamRef: "up-1" } : {}),
            ...(to === "succeeded" ? { chargeMicros: claim.task.priceMicros, assets: [] } : {})
          })
          expect(done._tag).toBe("Done")
          from = to
        })
    }
    for (const to of path) yield* mover.to(to)
    return mover
  })

for (const store of stores) {
  layer(T.layer(store, { runner: { maxStreamsPerAccount: 2 }, eventStreams: { heartbeatMs: 300 } }), {
    excludeTestServices: true
  })(`GET /api/v1/jobs/{id}/events over ${store.name}`, (it) => {
    describe("through the eventsource client", () => {
      it.effect("one event per status change, then the whole task as GET shows it; the EventSource then stops", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const { body: task } = yield* T.submit(who)
          const base = yield* T.baseUrl
          const received: Array<{ readonly type: string; readonly id: string; readonly data: any }> = []
          const source = new EventSource(`${base}${eventsPath(task.id)}`, {
            fetch: (input, init) => fetch(input, { ...init, headers: { ...init?.headers, ...T.bearer(who.secret) } })
          })
          const arrived = (count: number) =>
            promise(
              () =>
                new Promise<void>((resolve) => {
                  const check = () => (received.length >= count ? resolve() : setTimeout(check, 10))
                  check()
                })
            ).pipe(Effect.timeout("10 seconds"))
          for (const type of ["status", "task"]) {
            source.addEventListener(type, (event) => received.push({ type, id: event.lastEventId, data: JSON.parse(event.data) }))
          }
          const closed = new Promise<void>((resolve) => {
            source.onerror = () => {
              if (source.readyState === EventSource.CLOSED) resolve()
            }
          })
          yield* arrived(1)
          const worker = yield* moveAlong(task.id, ["submitting"])
          yield* arrived(2)
          yield* worker.to("running")
          yield* arrived(3)
          yield* worker.to("succeeded")
          yield* arrived(4)
          expect(received.map((event) => [event.type, event.id, event.data.status])).toEqual([
            ["status", "1", "queued"],
            ["status", "2", "submitting"],
            ["status", "3", "running"],
            ["task", "5", "succeeded"]
          ])
          expect(received[0]?.data).toEqual({ id: task.id, status: "queued" })
          const { body: shown } = yield* T.call(`/api/v1/jobs/${task.id}`, { headers: T.bearer(who.secret) })
          expect(received[3]?.data).toEqual(shown)
          // It reconnects with Last-Event-ID 5, is answered 204, and stops for good.
          yield* promise(() => closed).pipe(Effect.timeout("10 seconds"))
          source.close()
        })
      )
    })

    describe("on the wire", () => {
      it.effect("a terminal task's stream is its final event at once, then the end; after the final event, 204", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const { body: task } = yield* T.submit(who)
          yield* T.call(`/api/v1/jobs/${task.id}/cancel`, { method: "POST", headers: T.bearer(who.secret) })
          const stream = yield* open(who, task.id)
          expect(stream.status).toBe(200)
          expect(stream.headers.get("content-type")).toContain("text/event-stream")
          const frames = yield* promise(stream.rest).pipe(Effect.timeout("5 seconds"))
          expect(frames.map((frame) => [frame.id, frame.event])).toEqual([["5", "task"]])
          expect(JSON.parse(frames[0]?.data ?? "")).toMatchObject({ id: task.id, status: "failed", errorCode: "CANCELED" })
          const again = yield* open(who, task.id, { "last-event-id": "5" })
          expect(again.status).toBe(204)
          // An id that is not one of ours starts from the beginning.
          const fresh = yield* open(who, task.id, { "last-event-id": "banana" })
          expect((yield* promise(fresh.rest)).map((frame) => frame.id)).toEqual(["5"])
        })
      )

      it.effect("resumes after Last-Event-ID: only the later statuses, with heartbeats while nothing changes", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const { body: task } = yield* T.submit(who)
          const worker = yield* moveAlong(task.id, ["submitting"])
          const stream = yield* open(who, task.id, { "last-event-id": "2" })
          expect(stream.status).toBe(200)
          // Nothing after submitting yet: the first frames are heartbeats.
          const quiet = yield* promise(stream.next).pipe(Effect.timeout("5 seconds"))
          expect(quiet).toEqual({ comment: "heartbeat" })
          yield* worker.to("running")
          yield* worker.to("failed")
          const frames = (yield* promise(stream.rest).pipe(Effect.timeout("5 seconds"))).filter(
            (frame) => frame.comment === undefined
          )
          expect(frames.map((frame) => [frame.id, frame.event])).toEqual([
            ["3", "status"],
            ["5", "task"]
          ])
        })
      )

      it.effect(
        "while running, each progress change is an unnumbered progress event; a resumed stream gives the current one",
        () =>
          Effect.gen(function* () {
            const tasks = yield* TaskStore.TaskStore
            const who = yield* T.customer()
            const { body: task } = yield* T.submit(who)
            const worker = yield* moveAlong(task.id, ["submitting", "running"])
            const stream = yield* open(who, task.id, { "last-event-id": "2" })
            expect(yield* promise(stream.next).pipe(Effect.timeout("5 seconds"))).toMatchObject({ id: "3", event: "status" })
            expect(yield* tasks.noteProgress(task.id, 25)).toBe(true)
            expect(yield* promise(stream.next).pipe(Effect.timeout("5 seconds"))).toEqual({
              event: "progress",
              data: JSON.stringify({ id: task.id, progress: 25 })
            })
            const { body: shown } = yield* T.call(`/api/v1/jobs/${task.id}`, { headers: T.bearer(who.secret) })
            expect(shown).toMatchObject({ status: "running", progress: 25 })
            const resumed = yield* open(who, task.id, { "last-event-id": "3" })
            expect(yield* promise(resumed.next).pipe(Effect.timeout("5 seconds"))).toEqual({
              event: "progress",
              data: JSON.stringify({ id: task.id, progress: 25 })
            })
            resumed.close()
            yield* worker.to("failed")
            const frames = (yield* promise(stream.rest).pipe(Effect.timeout("5 seconds"))).filter(
              (frame) => frame.comment === undefined
            )
            expect(frames.map((frame) => [frame.id, frame.event])).toEqual([["5", "task"]])
            expect(JSON.parse(frames[0]?.data ?? "{}").progress).toBeUndefined()
          })
      )

      it.effect("bounds the open streams of an account: past the bound 429 CONCURRENCY_LIMITED; other accounts unaffected", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const other = yield* T.customer()
          const { body: task } = yield* T.submit(who)
          const { body: theirs } = yield* T.submit(other)
          const first = yield* open(who, task.id)
          const second = yield* open(who, task.id)
          expect([first.status, second.status]).toEqual([200, 200])
          const refused = yield* T.call(eventsPath(task.id), { headers: T.bearer(who.secret) })
          expect(refused.status).toBe(429)
          expect(refused.body.code).toBe("CONCURRENCY_LIMITED")
          expect(refused.body.error).toContain("2 event streams")
          expect(refused.headers.get("retry-after")).toBe("5")
          const theirStream = yield* open(other, theirs.id)
          expect(theirStream.status).toBe(200)
          // A closed stream gives its slot back.
          first.close()
          yield* Effect.sleep("200 millis")
          const third = yield* open(who, task.id)
          expect(third.status).toBe(200)
          for (const stream of [second, theirStream, third]) stream.close()
        })
      )

      it.effect("another account's task, or no task, is 404 JOB_NOT_FOUND as GET /api/v1/jobs/{id}", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const other = yield* T.customer()
          const { body: task } = yield* T.submit(who)
          for (const id of [task.id, "task_00000000-0000-4000-8000-000000000000", "nonsense"]) {
            const reply = yield* T.call(eventsPath(id), { headers: T.bearer(other.secret) })
            expect([reply.status, reply.body.code], id).toEqual([404, "JOB_NOT_FOUND"])
          }
          const anonymous = yield* T.call(eventsPath(task.id))
          expect(anonymous.status).toBe(401)
        })
      )
    })
  })
}
