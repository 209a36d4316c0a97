import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const json = (who: T.Customer, method: string, body?: unknown) => ({
  method,
  headers: { ...T.bearer(who.secret), "content-type": "application/json" },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

const create = (who: T.Customer, body: unknown) => T.call("/api/v1/webhook-endpoints", json(who, "POST", body))

for (const store of stores) {
  layer(T.layer(store), { excludeTestServices: true })(`webhooks over ${store.name}`, (it) => {
    describe("/api/v1/webhook-endpoints", () => {
      it.effect("creates an endpoint (the secret shown once), lists, reads, changes, rotates and deletes it", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const made = yield* create(who, { url: "https://hooks.example.com/taskmeter", events: ["task.succeeded"] })
          expect(made.status).toBe(201)
          expect(made.body).toMatchObject({
            url: "https://hooks.example.com/taskmeter",
            events: ["task.succeeded"],
            enabled: true,
            disabledReason: null,
            previousSecretExpiresAt: null
          })
          expect(made.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
          const id: string = made.body.id
          const listed = yield* T.call("/api/v1/webhook-endpoints", { headers: T.bearer(who.secret) })
          expect(listed.body.data).toHaveLength(1)
          expect(listed.body.data[0].secret).toBeUndefined()
          const read = yield* T.call(`/api/v1/webhook-endpoints/${id}`, { headers: T.bearer(who.secret) })
          expect(read.body).toMatchObject({ id, enabled: true })
          expect(read.body.secret).toBeUndefined()
          const paused = yield* T.call(`/api/v1/webhook-endpoints/${id}`, json(who, "PATCH", { enabled: false }))
          expect(paused.body).toMatchObject({ enabled: false, disabledReason: "disabled by its owner" })
          const changed = yield* T.call(
            `/api/v1/webhook-endpoints/${id}`,
            json(who, "PATCH", { enabled: true, events: ["task.failed", "task.succeeded"] })
          )
          expect(changed.body).toMatchObject({ enabled: true, disabledReason: null, events: ["task.failed", "task.succeeded"] })
          const rotated = yield* T.call(`/api/v1/webhook-endpoints/${id}/rotate-secret`, json(who, "POST"))
          expect(rotated.status).toBe(200)
          expect(rotated.body.secret).not.toBe(made.body.secret)
          const overlap = Date.parse(rotated.body.previousSecretExpiresAt) - Date.now()
          expect(overlap).toBeGreaterThan(23 * 3600 * 1000)
          expect(overlap).toBeLessThanOrEqual(24 * 3600 * 1000)
          const deleted = yield* T.call(`/api/v1/webhook-endpoints/${id}`, json(who, "DELETE"))
          expect(deleted.status).toBe(204)
          const gone = yield* T.call(`/api/v1/webhook-endpoints/${id}`, { headers: T.bearer(who.secret) })
          expect(gone.status).toBe(404)
        })
      )

      it.effect("subscribes to task.running and the payment events only when named", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const plain = yield* create(who, { url: "https://hooks.example.com/plain" })
          expect(plain.body.events).toEqual(["task.succeeded", "task.failed", "task.reconciliation_required"])
          const every = [
            "task.running",
            "task.succeeded",
            "payment.succeeded",
            "payment.refunded",
            "payment.disputed",
            "payment.dispute_closed"
          ]
          const all = yield* create(who, { url: "https://hooks.example.com/all", events: every })
          expect(all.status).toBe(201)
          expect(all.body.events).toEqual(every)
          const changed = yield* T.call(
            `/api/v1/webhook-endpoints/${plain.body.id}`,
            json(who, "PATCH", { events: ["payment.succeeded"] })
          )
          expect(changed.body.events).toEqual(["payment.succeeded"])
        })
      )

      it.effect("refuses URLs the outbound policy refuses and bad events with 400, storing nothing", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          for (const url of ["http://hooks.example.com/", "https://10.0.0.7/hook", "https://localhost/hook", "https://[::1]/"]) {
            const refused = yield* create(who, { url })
            expect(refused.status, url).toBe(400)
            expect(refused.body.code).toBe("INVALID_REQUEST")
            expect(refused.body.error).toContain("send a public https URL")
          }
          const badEvents = yield* create(who, { url: "https://hooks.example.com/", events: ["task.started"] })
          expect(badEvents.status).toBe(400)
          const none = yield* create(who, { url: "https://hooks.example.com/", events: [] })
          expect(none.status).toBe(400)
          const listed = yield* T.call("/api/v1/webhook-endpoints", { headers: T.bearer(who.secret) })
          expect(listed.body.data).toEqual([])
        })
      )

      it.effect("answers another account's endpoints and deliveries 404, and asks for scope webhooks:manage", () =>
        Effect.gen(function* () {
          const owner = yield* T.customer()
          const other = yield* T.customer()
          const made = yield* create(owner, { url: "https://hooks.example.com/" })
          const id: string = made.body.id
          for (const [path, init] of [
            [`/api/v1/webhook-endpoints/${id}`, { headers: T.bearer(other.secret) }],
            [`/api/v1/webhook-endpoints/${id}`, json(other, "PATCH", { enabled: false })],
            [`/api/v1/webhook-endpoints/${id}`, json(other, "DELETE")],
            [`/api/v1/webhook-endpoints/${id}/rotate-secret`, json(other, "POST")],
            [`/api/v1/webhook-endpoints/${id}/deliveries`, { headers: T.bearer(other.secret) }],
            ["/api/v1/webhook-deliveries/msg_unknown/resend", json(other, "POST")]
          ] as const) {
            const reply = yield* T.call(path, init)
            expect(reply.status, `${init.method ?? "GET"} ${path}`).toBe(404)
            expect(reply.body.code).toBe("REQUEST_NOT_FOUND")
          }
          expect((yield* T.call(`/api/v1/webhook-endpoints/${id}`, { headers: T.bearer(owner.secret) })).status).toBe(200)
          const readOnly = yield* T.customer(10_000_000, { scopes: ["jobs:read", "usage:read"] })
          const refused = yield* T.call("/api/v1/webhook-endpoints", { headers: T.bearer(readOnly.secret) })
          expect(refused.status).toBe(403)
          expect(refused.body.code).toBe("INSUFFICIENT_SCOPE")
        })
      )

      it.effect("logs the deliveries a settled task raises, pages them, and sends one again by hand", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const made = yield* create(who, { url: "https://hooks.example.com/", events: ["task.succeeded"] })
          const taskIds: Array<string> = []
          for (let i = 0; i < 3; i++) {
            const submitted = yield* T.submit(who)
            taskIds.push(submitted.body.id)
            yield* T.succeedWithResult(who, submitted.body.id, T.PNG)
          }
          const path = `/api/v1/webhook-endpoints/${made.body.id}/deliveries`
          const first = yield* T.call(`${path}?limit=2`, { headers: T.bearer(who.secret) })
          expect(first.status).toBe(200)
          expect(first.body.data.map((d: { taskId: string }) => d.taskId)).toEqual([taskIds[2], taskIds[1]])
          expect(first.body.data[0]).toMatchObject({ type: "task.succeeded", status: "pending", attempts: [] })
          const second = yield* T.call(`${path}?limit=2&before=${first.body.nextCursor}`, { headers: T.bearer(who.secret) })
          expect(second.body.data.map((d: { taskId: string }) => d.taskId)).toEqual([taskIds[0]])
          expect(second.body.nextCursor).toBeNull()
          const resent = yield* T.call(`/api/v1/webhook-deliveries/${first.body.data[0].id}/resend`, json(who, "POST"))
          expect(resent.status).toBe(202)
          expect(resent.body).toMatchObject({ id: first.body.data[0].id, status: "pending" })
        })
      )

      it.effect("keeps one signing secret per account for submissions' own webhook URLs", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const first = yield* T.call("/api/v1/webhook-signing-secret", { headers: T.bearer(who.secret) })
          const again = yield* T.call("/api/v1/webhook-signing-secret", { headers: T.bearer(who.secret) })
          expect(first.body.secret).toMatch(/^whsec_/)
          expect(again.body.secret).toBe(first.body.secret)
        })
      )
    })

    describe("POST /api/v1/jobs with webhookUrl", () => {
      it.effect("admits a task with a public https webhookUrl and an event filter", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const reply = yield* T.submit(who, {
            model: T.MODEL,
            input: T.INPUT,
            webhookUrl: "https://hooks.example.com/one-task",
            webhookEvents: ["task.running", "task.succeeded", "task.failed"]
          })
          expect(reply.status).toBe(202)
          expect(reply.body.webhookUrl).toBeUndefined()
        })
      )

      it.effect("GET /api/v1/jobs/{id}/webhook-deliveries pages every delivery about the task: its own and its endpoints'", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const hook = yield* create(who, { url: "https://hooks.example.com/", events: ["task.succeeded"] })
          const submitted = yield* T.submit(who, { model: T.MODEL, input: T.INPUT, webhookUrl: "https://hooks.example.com/own" })
          const id: string = submitted.body.id
          const path = `/api/v1/jobs/${id}/webhook-deliveries`
          const before = yield* T.call(path, { headers: T.bearer(who.secret) })
          expect(before.status).toBe(200)
          expect(before.body).toEqual({ data: [], nextCursor: null })
          yield* T.succeedWithResult(who, id, T.PNG)
          yield* T.succeedWithResult(who, (yield* T.submit(who)).body.id, T.PNG)
          const first = yield* T.call(`${path}?limit=1`, { headers: T.bearer(who.secret) })
          expect(first.status).toBe(200)
          const second = yield* T.call(`${path}?limit=1&before=${first.body.nextCursor}`, { headers: T.bearer(who.secret) })
          expect(second.body.nextCursor).toBeNull()
          const all = [...first.body.data, ...second.body.data]
          expect(all.map((d: { endpointId: string | null; url: string }) => [d.endpointId, d.url]).sort()).toEqual(
            [
              [hook.body.id, "https://hooks.example.com/"],
              [null, "https://hooks.example.com/own"]
            ].sort()
          )
          for (const delivery of all) {
            expect(delivery).toMatchObject({ taskId: id, type: "task.succeeded", status: "pending", attempts: [] })
          }
        })
      )

      it.effect(
        "answers another account's, an unknown or a malformed task id 404 as GET /api/v1/jobs/{id} does; asks jobs:read",
        () =>
          Effect.gen(function* () {
            const owner = yield* T.customer()
            const other = yield* T.customer()
            const submitted = yield* T.submit(owner, {
              model: T.MODEL,
              input: T.INPUT,
              webhookUrl: "https://hooks.example.com/own"
            })
            yield* T.succeedWithResult(owner, submitted.body.id, T.PNG)
            for (const id of [submitted.body.id, "task_00000000-0000-7000-8000-000000000000", "nope"]) {
              const job = yield* T.call(`/api/v1/jobs/${id}`, { headers: T.bearer(other.secret) })
              const log = yield* T.call(`/api/v1/jobs/${id}/webhook-deliveries`, { headers: T.bearer(other.secret) })
              expect(log.status, id).toBe(404)
              expect(log.body, id).toEqual(job.body)
            }
            const usageOnly = yield* T.customer(10_000_000, { scopes: ["usage:read"] })
            const refused = yield* T.call(`/api/v1/jobs/${submitted.body.id}/webhook-deliveries`, {
              headers: T.bearer(usageOnly.secret)
            })
            expect(refused.status).toBe(403)
            expect(refused.body.code).toBe("INSUFFICIENT_SCOPE")
          })
      )

      it.effect("refuses a private or plain-http webhookUrl, or events without one, with 400 before reserving anything", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          for (const [extra, fragment] of [
            [{ webhookUrl: "https://192.168.1.10/hook" }, "webhookUrl names a loopback, private"],
            [{ webhookUrl: "http://hooks.example.com/" }, "webhookUrl is not an https URL"],
            [{ webhookUrl: "https://metadata.internal/" }, "webhookUrl names a local host"],
            [{ webhookEvents: ["task.failed"] }, "webhookEvents: needs a webhookUrl"],
            [{ webhookUrl: "https://hooks.example.com/", webhookEvents: ["task.started"] }, "webhookEvents"],
            [{ webhookUrl: "https://hooks.example.com/", webhookEvents: ["payment.succeeded"] }, "webhookEvents"]
          ] as const) {
            const reply = yield* T.submit(who, { model: T.MODEL, input: T.INPUT, ...extra })
            expect(reply.status, JSON.stringify(extra)).toBe(400)
            expect(reply.body.code).toBe("INVALID_REQUEST")
            expect(reply.body.error).toContain(fragment)
          }
          const usage = yield* T.usage(who)
          expect(usage.body.reservedMicros).toBe(0)
        })
      )
    })
  })
}
