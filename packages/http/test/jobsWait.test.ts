import { describe, expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const poll = (who: T.Customer, id: string, prefer?: string) =>
  T.call(`/api/v1/jobs/${id}`, { headers: { ...T.bearer(who.secret), ...(prefer === undefined ? {} : { prefer }) } })

for (const store of stores) {
  layer(T.layer(store, { runner: { maxWaitsPerAccount: 3 } }), { excludeTestServices: true })(
    `Prefer: wait over ${store.name}`,
    (it) => {
      describe("GET /api/v1/jobs/{id} with Prefer: wait", () => {
        it.effect("answers as soon as the task ends, echoing Preference-Applied", () =>
          Effect.gen(function* () {
            const who = yield* T.customer()
            const { body: task } = yield* T.submit(who)
            const waiting = yield* Effect.forkChild(poll(who, task.id, "wait=30"))
            yield* Effect.sleep("300 millis")
            const started = Date.now()
            yield* T.succeedWithResult(who, task.id, T.PNG)
            const reply = yield* Fiber.join(waiting)
            expect(Date.now() - started).toBeLessThan(5_000)
            expect(reply.status).toBe(200)
            expect(reply.body).toMatchObject({ id: task.id, status: "succeeded" })
            expect(reply.headers.get("preference-applied")).toBe("wait=30")
          })
        )

        it.effect("answers with the current status after N seconds when the task is still going", () =>
          Effect.gen(function* () {
            const who = yield* T.customer()
            const { body: task } = yield* T.submit(who)
            const started = Date.now()
            const reply = yield* poll(who, task.id, "respond-async, wait=1")
            expect(Date.now() - started).toBeGreaterThanOrEqual(950)
            expect([reply.status, reply.body.status]).toEqual([200, "queued"])
            expect(reply.headers.get("preference-applied")).toBe("wait=1")
          })
        )

        it.effect("answers a terminal task at once, and without Prefer waits for nothing", () =>
          Effect.gen(function* () {
            const who = yield* T.customer()
            const { body: task } = yield* T.submit(who)
            yield* T.call(`/api/v1/jobs/${task.id}/cancel`, { method: "POST", headers: T.bearer(who.secret) })
            const started = Date.now()
            const reply = yield* poll(who, task.id, "wait")
            expect(Date.now() - started).toBeLessThan(1_000)
            expect(reply.body.errorCode).toBe("CANCELED")
            expect(reply.headers.get("preference-applied")).toBe("wait=60")
            expect((yield* poll(who, task.id)).headers.get("preference-applied")).toBeNull()
          })
        )

        it.effect("refuses a wait out of range or malformed: 400 INVALID_REQUEST saying what to send", () =>
          Effect.gen(function* () {
            const who = yield* T.customer()
            const { body: task } = yield* T.submit(who)
            for (const prefer of ["wait=0", "wait=61", "wait=abc", "wait=-1", "wait=1.5", "wait="]) {
              const reply = yield* poll(who, task.id, prefer)
              expect(reply.status, prefer).toBe(400)
              expect(reply.body.code).toBe("INVALID_REQUEST")
              expect(reply.body.error).toContain("1 to 60")
            }
            // Other preferences are ignored (RFC 7240).
            expect((yield* poll(who, task.id, "return=minimal")).status).toBe(200)
          })
        )

        it.effect("holds at most maxWaitsPerAccount waits of one account; more answer at once without Preference-Applied", () =>
          Effect.gen(function* () {
            const who = yield* T.customer()
            const { body: task } = yield* T.submit(who)
            const holders = yield* Effect.forkChild(
              Effect.all([poll(who, task.id, "wait=2"), poll(who, task.id, "wait=2"), poll(who, task.id, "wait=2")], {
                concurrency: "unbounded"
              })
            )
            yield* Effect.sleep("500 millis")
            const started = Date.now()
            const extra = yield* poll(who, task.id, "wait=2")
            expect(Date.now() - started).toBeLessThan(1_000)
            expect(extra.status).toBe(200)
            expect(extra.headers.get("preference-applied")).toBeNull()
            const other = yield* T.customer()
            const { body: theirs } = yield* T.submit(other)
            expect((yield* poll(other, theirs.id, "wait=1")).headers.get("preference-applied")).toBe("wait=1")
            const held = yield* Fiber.join(holders)
            expect(held.map((reply) => reply.headers.get("preference-applied"))).toEqual(["wait=2", "wait=2", "wait=2"])
          })
        )
      })

      describe("POST /api/v1/jobs with Prefer: wait", () => {
        it.effect("answers 202 with the task as it stands after the wait, Preference-Applied echoed", () =>
          Effect.gen(function* () {
            const who = yield* T.customer()
            const reply = yield* T.call("/api/v1/jobs", {
              method: "POST",
              headers: {
                ...T.bearer(who.secret),
                "content-type": "application/json",
                "idempotency-key": crypto.randomUUID(),
                prefer: "wait=1"
              },
              body: JSON.stringify({ model: T.MODEL, input: T.INPUT })
            })
            expect(reply.status).toBe(202)
            expect(reply.body).toMatchObject({ status: "queued", replayed: false })
            expect(reply.headers.get("preference-applied")).toBe("wait=1")
          })
        )

        it.effect("refuses a bad wait before admission: 400, nothing reserved", () =>
          Effect.gen(function* () {
            const who = yield* T.customer()
            const reply = yield* T.call("/api/v1/jobs", {
              method: "POST",
              headers: {
                ...T.bearer(who.secret),
                "content-type": "application/json",
                "idempotency-key": crypto.randomUUID(),
                prefer: "wait=600"
              },
              body: JSON.stringify({ model: T.MODEL, input: T.INPUT })
            })
            expect(reply.status).toBe(400)
            expect(reply.body.code).toBe("INVALID_REQUEST")
            expect((yield* T.usage(who)).body.reservedMicros).toBe(0)
          })
        )
      })
    }
  )
}

layer(T.layer(stores[0]!, { runner: { maxWaits: 2 } }), { excludeTestServices: true })(
  "Prefer: wait bounded per process (MAX_WAITS_PER_PROCESS)",
  (it) => {
    it.effect("holds at most maxWaits waits in the process, whatever the account; more answer at once", () =>
      Effect.gen(function* () {
        const [first, second, third] = [yield* T.customer(), yield* T.customer(), yield* T.customer()]
        const tasks = [(yield* T.submit(first)).body, (yield* T.submit(second)).body, (yield* T.submit(third)).body]
        const holders = yield* Effect.forkChild(
          Effect.all([poll(first, tasks[0].id, "wait=2"), poll(second, tasks[1].id, "wait=2")], { concurrency: "unbounded" })
        )
        yield* Effect.sleep("500 millis")
        const started = Date.now()
        const extra = yield* poll(third, tasks[2].id, "wait=2")
        expect(Date.now() - started).toBeLessThan(1_000)
        expect([extra.status, extra.body.status]).toEqual([200, "queued"])
        expect(extra.headers.get("preference-applied")).toBeNull()
        const held = yield* Fiber.join(holders)
        expect(held.map((reply) => reply.headers.get("preference-applied"))).toEqual(["wait=2", "wait=2"])
      })
    )
  }
)
