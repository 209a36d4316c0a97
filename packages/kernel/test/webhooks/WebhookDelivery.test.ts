import { Clock, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "@effect/vitest"
import { MemoryStore } from "@taskmeter/storage-memory"
import { Webhook } from "standardwebhooks"
import { AccountContacts } from "../../src/accounts/AccountContacts.ts"
import * as Errors from "../../src/domain/Errors.ts"
import type { AccountId } from "../../src/domain/Ids.ts"
import { micros } from "../../src/domain/Money.ts"
import * as Mailer from "../../src/mail/Mailer.ts"
import * as AddressPolicy from "../../src/outbound/AddressPolicy.ts"
import { TaskStore } from "../../src/tasks/TaskStore.ts"
import type { TaskRecord } from "../../src/tasks/TaskStore.ts"
import * as TaskView from "../../src/tasks/TaskView.ts"
import { admission, admitted, fundedAccount, newTask, USD } from "../../src/testing/Fixtures.ts"
import * as Backoff from "../../src/webhooks/Backoff.ts"
import * as WebhookDelivery from "../../src/webhooks/WebhookDelivery.ts"
import { WebhookEndpoints } from "../../src/webhooks/WebhookEndpoints.ts"
import * as Endpoints from "../../src/webhooks/WebhookEndpoints.ts"
import type { TaskWebhook } from "../../src/webhooks/WebhookEvent.ts"
import { WebhookStore } from "../../src/webhooks/WebhookStore.ts"
import * as Receiver from "./Receiver.ts"

const DAY = 24 * 60 * 60 * 1000
const mail = Mailer.makeMemory()
const contact = "owner@example.com"

const layer = Endpoints.layer({ rotationOverlapMs: DAY }).pipe(
  Layer.provideMerge(MemoryStore.layer),
  Layer.provideMerge(Layer.succeed(AddressPolicy.AddressPolicy, { ...AddressPolicy.publicOnly, allowLoopbackForTests: true })),
  Layer.provideMerge(Mailer.layerMemory(mail)),
  Layer.provideMerge(Layer.succeed(AccountContacts, { emailsOf: () => Effect.succeed([contact]) }))
)

const options: WebhookDelivery.Options = { disableAfterMs: 5 * DAY, random: () => 0.5 }
const deliverDue = WebhookDelivery.deliverDue(options)

const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

/** A receiver answering `statuses`, an account with credits, and its endpoint there for every event. */
const setup = (statuses: Array<number>) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(Date.now())
    const receiver = yield* Receiver.make(statuses)
    const accountId = yield* fundedAccount(10 * USD)
    const endpoint = yield* (yield* WebhookEndpoints).create(accountId, {
      url: receiver.url,
      events: ["task.succeeded", "task.failed", "task.reconciliation_required"]
    })
    return { receiver, accountId, endpoint }
  })

/** A task admitted and succeeded now. */
const succeeded = (accountId: AccountId, webhook?: TaskWebhook) =>
  Effect.gen(function* () {
    const at = yield* now
    const task = yield* admitted(
      admission(
        newTask(accountId, {
          createdAt: at,
          deadlineAt: new Date(at.getTime() + DAY),
          ...(webhook === undefined ? {} : { webhook })
        })
      )
    )
    const store = yield* TaskStore
    const [claim] = yield* store.claim({ workerId: "w", limit: 1, leaseMs: 60_000, now: at })
    yield* store.transition({
      taskId: task.id,
      leaseToken: claim!.leaseToken,
      from: "queued",
      to: "submitting",
      now: at,
      keepLease: true
    })
    const done = yield* store.transition({
      taskId: task.id,
      leaseToken: claim!.leaseToken,
      from: "submitting",
      to: "succeeded",
      now: at,
      keepLease: false,
      chargeMicros: micros(USD)
    })
    return (done as { readonly task: TaskRecord }).task
  })

const deliveries = (accountId: AccountId, endpointId: string) =>
  Effect.map(
    WebhookEndpoints.use((endpoints) => endpoints.deliveries(accountId, endpointId, { limit: 100 })),
    (page) => page.deliveries
  )

const advance = (ms: number) => TestClock.adjust(ms)

describe("WebhookDelivery", () => {
  it.effect("signs each delivery so that standardwebhooks verifies it, the body the task as GET /api/v1/jobs/{id} shows it", () =>
    Effect.gen(function* () {
      const { receiver, accountId, endpoint } = yield* setup([200])
      const task = yield* succeeded(accountId)
      expect(yield* deliverDue).toBe(1)
      const [request] = receiver.received
      const payload = new Webhook(endpoint.secret).verify(request!.body, request!.headers)
      expect(payload).toEqual({
        type: "task.succeeded",
        timestamp: task.updatedAt.toISOString(),
        data: TaskView.task(task, task.updatedAt)
      })
      expect(request!.headers["content-type"]).toBe("application/json")
      const [logged] = yield* deliveries(accountId, endpoint.id)
      expect(logged).toMatchObject({ id: request!.headers["webhook-id"], status: "delivered", nextAttemptAt: null })
      expect(logged!.attempts).toMatchObject([{ statusCode: 200, responseExcerpt: "answer 200", error: null }])
      expect(yield* deliverDue).toBe(0)
    }).pipe(Effect.scoped, Effect.provide(layer))
  )

  it.effect(
    "retries a failing receiver on the backoff schedule (a redirect is a failure) with the same webhook-id until it recovers",
    () =>
      Effect.gen(function* () {
        const { receiver, accountId, endpoint } = yield* setup([500, 302, 204])
        yield* succeeded(accountId)
        expect(yield* deliverDue).toBe(1)
        yield* advance(Backoff.delays[0]! - 1)
        expect(yield* deliverDue).toBe(0)
        yield* advance(1)
        expect(yield* deliverDue).toBe(1)
        yield* advance(Backoff.delays[1]! - 1)
        expect(yield* deliverDue).toBe(0)
        yield* advance(1)
        expect(yield* deliverDue).toBe(1)
        const ids = new Set(receiver.received.map((r) => r.headers["webhook-id"]))
        expect(receiver.received).toHaveLength(3)
        expect(ids.size).toBe(1)
        const first = { delivery: [...ids][0]! }
        for (const request of receiver.received) {
          const timestamp = new Date(Number(request.headers["webhook-timestamp"]) * 1000)
          expect(request.headers["webhook-signature"]).toBe(
            new Webhook(endpoint.secret).sign(first.delivery, timestamp, request.body)
          )
        }
        const [logged] = yield* deliveries(accountId, endpoint.id)
        expect(logged!.status).toBe("delivered")
        expect(logged!.attempts.map((a) => [a.statusCode, a.error])).toEqual([
          [500, "HTTP 500"],
          [null, expect.stringContaining("redirect")],
          [204, null]
        ])
        expect((yield* WebhookStore.use((s) => s.getEndpoint(accountId, endpoint.id)))?.failingSince).toBeNull()
      }).pipe(Effect.scoped, Effect.provide(layer))
  )

  it.effect("fails a delivery after the schedule's last attempt, more than 24 hours after the first", () =>
    Effect.gen(function* () {
      const { receiver, accountId, endpoint } = yield* setup([503])
      yield* succeeded(accountId)
      const first = yield* now
      expect(yield* deliverDue).toBe(1)
      for (const delay of Backoff.delays) {
        yield* advance(delay)
        expect(yield* deliverDue).toBe(1)
      }
      const last = yield* now
      expect(last.getTime() - first.getTime()).toBeGreaterThan(DAY)
      yield* advance(30 * DAY)
      expect(yield* deliverDue).toBe(0)
      const [logged] = yield* deliveries(accountId, endpoint.id)
      expect(logged).toMatchObject({ status: "failed", nextAttemptAt: null })
      expect(logged!.attempts).toHaveLength(Backoff.maxAttempts)
      expect(receiver.received).toHaveLength(Backoff.maxAttempts)
    }).pipe(Effect.scoped, Effect.provide(layer))
  )

  it.effect("signs with the new and the previous secret during a rotation's overlap, then with the new one only", () =>
    Effect.gen(function* () {
      const { receiver, accountId, endpoint } = yield* setup([204])
      const rotated = yield* WebhookEndpoints.use((e) => e.rotateSecret(accountId, endpoint.id))
      expect(rotated.secret).not.toBe(endpoint.secret)
      yield* succeeded(accountId)
      yield* deliverDue
      const during = receiver.received[0]!
      expect(during.headers["webhook-signature"]!.split(" ")).toHaveLength(2)
      new Webhook(endpoint.secret).verify(during.body, during.headers)
      new Webhook(rotated.secret).verify(during.body, during.headers)
      yield* advance(DAY + 1)
      yield* succeeded(accountId)
      yield* deliverDue
      const after = receiver.received[1]!
      const id = after.headers["webhook-id"]!
      const timestamp = new Date(Number(after.headers["webhook-timestamp"]) * 1000)
      expect(after.headers["webhook-signature"]).toBe(new Webhook(rotated.secret).sign(id, timestamp, after.body))
      expect(after.headers["webhook-signature"]).not.toContain(new Webhook(endpoint.secret).sign(id, timestamp, after.body))
    }).pipe(Effect.scoped, Effect.provide(layer))
  )

  it.effect("refuses private and local addresses: when an endpoint is made, and when a delivery resolves to one", () =>
    Effect.gen(function* () {
      const { accountId } = yield* setup([204])
      const endpoints = yield* WebhookEndpoints
      for (const url of [
        "https://10.0.0.1/hook",
        "https://169.254.169.254/latest",
        "http://hooks.example.com/",
        "https://printer.local/"
      ]) {
        const refused = yield* Effect.flip(endpoints.create(accountId, { url, events: ["task.succeeded"] }))
        expect(refused).toBeInstanceOf(Errors.InvalidRequest)
        expect(refused.message).toContain("send a public https URL")
      }
      expect(yield* endpoints.list(accountId)).toHaveLength(1)
      // One stored before the policy would have refused it: the delivery is refused, never sent.
      const store = yield* WebhookStore
      const privateOne = yield* store.createEndpoint({
        id: "whep_private",
        accountId,
        url: "https://10.1.2.3/hook",
        events: ["task.succeeded"],
        secret: "whsec_c2VjcmV0",
        now: yield* now
      })
      yield* succeeded(accountId)
      expect(yield* deliverDue).toBe(2)
      const [logged] = yield* deliveries(accountId, privateOne.id)
      expect(logged!.status).toBe("pending")
      expect(logged!.attempts).toMatchObject([{ statusCode: null, error: expect.stringContaining("non-public address") }])
    }).pipe(Effect.scoped, Effect.provide(layer))
  )

  it.effect("disables an endpoint failing for WEBHOOK_DISABLE_AFTER and tells the account's contacts by mail, once", () =>
    Effect.gen(function* () {
      const { receiver, accountId, endpoint } = yield* setup([500])
      const sentBefore = mail.sent.length
      const disableAfterMs = 3 * 60 * 60 * 1000
      const deliverDue = WebhookDelivery.deliverDue({ ...options, disableAfterMs })
      yield* succeeded(accountId)
      yield* deliverDue
      let elapsed = 0
      for (const delay of Backoff.delays.slice(0, 5)) {
        yield* advance(delay)
        elapsed += delay
        yield* deliverDue
        const current = yield* WebhookStore.use((s) => s.getEndpoint(accountId, endpoint.id))
        expect(current!.enabled).toBe(elapsed < disableAfterMs)
      }
      const disabled = yield* WebhookStore.use((s) => s.getEndpoint(accountId, endpoint.id))
      expect(disabled!.disabledReason).toMatch(/^every delivery failed for/)
      const notices = mail.sent.slice(sentBefore)
      expect(notices).toHaveLength(1)
      expect(notices[0]).toMatchObject({ to: contact, subject: "A taskmeter webhook endpoint was disabled" })
      expect(notices[0]!.text).toContain(endpoint.url)
      // A disabled endpoint raises nothing new.
      const count = receiver.received.length
      yield* succeeded(accountId)
      expect(yield* deliverDue).toBe(0)
      expect(receiver.received).toHaveLength(count)
    }).pipe(Effect.scoped, Effect.provide(layer))
  )

  it.effect(
    "sends a delivery again by hand with the same webhook-id, and a submission's own webhook with the account's secret",
    () =>
      Effect.gen(function* () {
        const { receiver, accountId, endpoint } = yield* setup([204])
        const own = yield* Receiver.make([200])
        yield* succeeded(accountId, { url: own.url, events: ["task.succeeded"] })
        expect(yield* deliverDue).toBe(2)
        const [first] = yield* deliveries(accountId, endpoint.id)
        const endpoints = yield* WebhookEndpoints
        const other = yield* fundedAccount(0, "other")
        expect(yield* Effect.flip(endpoints.resend(other, first!.id))).toBeInstanceOf(Errors.RequestNotFound)
        expect(yield* endpoints.resend(accountId, first!.id)).toMatchObject({ id: first!.id, status: "pending" })
        expect(yield* deliverDue).toBe(1)
        expect(receiver.received.map((r) => r.headers["webhook-id"])).toEqual([first!.id, first!.id])
        const [again] = yield* deliveries(accountId, endpoint.id)
        expect(again!.attempts).toHaveLength(2)
        const secret = yield* endpoints.signingSecret(accountId)
        expect(own.received).toHaveLength(1)
        new Webhook(secret).verify(own.received[0]!.body, own.received[0]!.headers)
      }).pipe(Effect.scoped, Effect.provide(layer))
  )
})
