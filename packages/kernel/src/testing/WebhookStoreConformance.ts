/**
 * The conformance suite of the WebhookStore port (`suite(name, makeLayer)`), run by every store:
 * endpoints scoped to their account and rotated with the previous secret kept; settling a task
 * raises one delivery per matching enabled endpoint and one for its own webhook, in the same
 * write; a claimed delivery is leased (not claimed twice, due again with the same id when the
 * lease lapses, the old lease's record refused); attempts, retries, the failing streak, disabling
 * once, a round's outcomes written together (each endpoint's streak as its latest attempt says),
 * the delivery log pages (per endpoint and per task) and resends, and finished deliveries purged.
 */
import { Effect } from "effect"
import type { Layer } from "effect"
import { describe, expect, it } from "@effect/vitest"
import type { AccountId } from "../domain/Ids.ts"
import { micros } from "../domain/Money.ts"
import { TaskStore } from "../tasks/TaskStore.ts"
import type { TaskRecord } from "../tasks/TaskStore.ts"
import type { EventType, TaskWebhook } from "../webhooks/WebhookEvent.ts"
import { WebhookStore } from "../webhooks/WebhookStore.ts"
import type { Attempt, AttemptRecord } from "../webhooks/WebhookStore.ts"
import type { Stores } from "./Case.ts"
import { admission, admitted, at, claimTask, defined, expectBooksBalance, fundedAccount, newTask, T0, USD } from "./Fixtures.ts"

export type WebhookStores = Stores | WebhookStore

let counter = 0

const endpoint = (accountId: AccountId, events: ReadonlyArray<EventType> = ["task.succeeded", "task.failed"]) =>
  WebhookStore.use((store) =>
    store.createEndpoint({
      id: `whep_conformance_${++counter}`,
      accountId,
      url: `https://hooks.example.com/${counter}`,
      events,
      secret: `whsec_secret${counter}`,
      now: T0
    })
  )

/** Admits a task (with its own webhook if given) and settles it as `to` at `now`. */
const settled = (
  accountId: AccountId,
  to: "succeeded" | "failed" | "reconciliation_required",
  now: Date,
  webhook?: TaskWebhook
) =>
  Effect.gen(function* () {
    const task = yield* admitted(admission(newTask(accountId, webhook === undefined ? {} : { webhook })))
    const claim = yield* claimTask(task.id, T0)
    const store = yield* TaskStore
    const submitting = yield* store.transition({
      taskId: task.id,
      leaseToken: claim.leaseToken,
      from: "queued",
      to: "submitting",
      now: T0,
      keepLease: true
    })
    expect(submitting._tag).toBe("Done")
    const moved = yield* store.transition({
      taskId: task.id,
      leaseToken: claim.leaseToken,
      from: "submitting",
      to,
      now,
      keepLease: false,
      ...(to === "succeeded" ? { chargeMicros: micros(USD) } : {}),
      ...(to === "failed" ? { errorCode: "UPSTREAM_ERROR" } : {})
    })
    expect(moved._tag).toBe("Done")
    return (moved as { readonly task: TaskRecord }).task
  })

const claim = (now: Date, limit = 100, leaseMs = 30_000) => WebhookStore.use((store) => store.claim({ limit, leaseMs, now }))

/** A round of one record. */
const record = (one: AttemptRecord, now: Date) =>
  WebhookStore.use((store) => Effect.map(store.recordRound([one], now), (recorded) => recorded[0]!))

const attempt = (now: Date, statusCode: number | null): Attempt => ({
  at: now,
  statusCode,
  latencyMs: 12,
  responseExcerpt: statusCode === null ? null : `answer ${statusCode}`,
  error: statusCode !== null && statusCode < 300 ? null : "HTTP 500"
})

export const suite = (name: string, makeLayer: () => Layer.Layer<WebhookStores, unknown>): void => {
  describe(`${name} WebhookStore conformance`, () => {
    const test = (title: string, body: Effect.Effect<void, unknown, WebhookStores>) =>
      it.live(title, () => Effect.andThen(body, expectBooksBalance).pipe(Effect.provide(makeLayer())))

    test(
      "endpoints belong to their account; a rotation keeps the previous secret until the overlap ends",
      Effect.gen(function* () {
        const store = yield* WebhookStore
        const mine = yield* fundedAccount(0)
        const theirs = yield* fundedAccount(0, "other")
        const made = yield* endpoint(mine)
        expect(made).toMatchObject({ accountId: mine, enabled: true, disabledReason: null, previousSecret: null })
        expect(yield* store.getEndpoint(theirs, made.id)).toBeUndefined()
        expect(yield* store.listEndpoints(theirs)).toEqual([])
        expect((yield* store.listEndpoints(mine)).map((e) => e.id)).toEqual([made.id])
        expect(yield* store.updateEndpoint(theirs, made.id, { enabled: false, now: at(1) })).toBeUndefined()
        const off = defined(yield* store.updateEndpoint(mine, made.id, { enabled: false, disabledReason: "paused", now: at(1) }))
        expect(off).toMatchObject({ enabled: false, disabledReason: "paused" })
        const on = defined(
          yield* store.updateEndpoint(mine, made.id, { enabled: true, url: "https://hooks.example.com/new", now: at(2) })
        )
        expect(on).toMatchObject({ enabled: true, disabledReason: null, url: "https://hooks.example.com/new" })
        const rotated = defined(
          yield* store.rotateSecret(mine, made.id, { secret: "whsec_next", previousExpiresAt: at(100), now: at(3) })
        )
        expect(rotated).toMatchObject({ secret: "whsec_next", previousSecret: made.secret, previousSecretExpiresAt: at(100) })
        expect(
          yield* store.rotateSecret(theirs, made.id, { secret: "x", previousExpiresAt: at(100), now: at(3) })
        ).toBeUndefined()
        expect(yield* store.deleteEndpoint(theirs, made.id)).toBe(false)
        expect(yield* store.deleteEndpoint(mine, made.id)).toBe(true)
        expect(yield* store.getEndpoint(mine, made.id)).toBeUndefined()
      })
    )

    test(
      "a settlement raises one delivery per matching enabled endpoint and one for the task's own webhook",
      Effect.gen(function* () {
        const account = yield* fundedAccount(10 * USD)
        const both = yield* endpoint(account, ["task.succeeded", "task.failed"])
        const failures = yield* endpoint(account, ["task.failed"])
        const paused = yield* endpoint(account, ["task.succeeded"])
        yield* WebhookStore.use((store) => store.updateEndpoint(account, paused.id, { enabled: false, now: T0 }))
        const other = yield* fundedAccount(0, "other")
        yield* endpoint(other, ["task.succeeded"])
        const task = yield* settled(account, "succeeded", at(10), { url: "https://own.example.com/hook", events: null })
        const claims = yield* claim(at(10))
        expect(claims.map((c) => c.delivery.url).sort()).toEqual([both.url, "https://own.example.com/hook"].sort())
        for (const c of claims) {
          expect(c.delivery).toMatchObject({ accountId: account, taskId: task.id, type: "task.succeeded", status: "pending" })
          expect(c.delivery.occurredAt).toEqual(at(10))
          expect(c.task).toEqual(task)
          expect(c.attemptNumber).toBe(1)
          expect(c.endpointEnabled).toBe(true)
        }
        const own = claims.find((c) => c.delivery.endpointId === null)
        expect(own?.secrets).toEqual([])
        expect(claims.find((c) => c.delivery.endpointId === both.id)?.secrets).toEqual([both.secret])
        expect(failures.id).toBeDefined()
      })
    )

    test(
      "a task's own webhook filter and the endpoints' events pick the deliveries; moves that settle nothing raise none",
      Effect.gen(function* () {
        const account = yield* fundedAccount(10 * USD)
        const held = yield* endpoint(account, ["task.reconciliation_required"])
        yield* settled(account, "failed", at(5), { url: "https://own.example.com/hook", events: ["task.succeeded"] })
        expect(yield* claim(at(5))).toEqual([])
        const task = yield* settled(account, "reconciliation_required", at(6))
        const claims = yield* claim(at(6))
        expect(claims.map((c) => [c.delivery.endpointId, c.delivery.type, c.task?.status])).toEqual([
          [held.id, "task.reconciliation_required", "reconciliation_required"]
        ])
        // Resolving it later raises its own event; the first keeps the task as it was.
        const resolved = yield* TaskStore.use((store) =>
          store.resolve({ taskId: task.id, to: "failed", now: at(7), errorCode: "UPSTREAM_ERROR" })
        )
        expect(resolved?.status).toBe("failed")
        expect(yield* claim(at(7))).toEqual([])
      })
    )

    test(
      "task.running is raised only where it is named: an endpoint's events or the task's own filter",
      Effect.gen(function* () {
        const account = yield* fundedAccount(10 * USD)
        const running = yield* endpoint(account, ["task.running"])
        yield* endpoint(account, ["task.succeeded", "task.failed", "task.reconciliation_required"])
        const store = yield* TaskStore
        const start = (webhook: TaskWebhook, now: Date) =>
          Effect.gen(function* () {
            const task = yield* admitted(admission(newTask(account, { webhook })))
            const leased = yield* claimTask(task.id, T0)
            const moves = [
              { from: "queued", to: "submitting" },
              { from: "submitting", to: "running" }
            ] as const
            for (const { from, to } of moves) {
              const moved = yield* store.transition({
                taskId: task.id,
                leaseToken: leased.leaseToken,
                from,
                to,
                now,
                keepLease: true
              })
              expect(moved._tag).toBe("Done")
            }
            return task
          })
        const quiet = yield* start({ url: "https://own.example.com/settled", events: null }, at(3))
        const loud = yield* start({ url: "https://own.example.com/running", events: ["task.running"] }, at(4))
        const claims = yield* claim(at(4))
        expect(claims.map((c) => [c.delivery.taskId, c.delivery.endpointId, c.delivery.type, c.task?.status]).sort()).toEqual(
          [
            [quiet.id, running.id, "task.running", "running"],
            [loud.id, running.id, "task.running", "running"],
            [loud.id, null, "task.running", "running"]
          ].sort()
        )
      })
    )

    test(
      "a claimed delivery is leased: not claimed twice, due again with the same id when its lease lapses",
      Effect.gen(function* () {
        const account = yield* fundedAccount(10 * USD)
        yield* endpoint(account)
        yield* settled(account, "succeeded", at(1))
        const [first] = yield* claim(at(1), 10, 30_000)
        expect(first).toBeDefined()
        expect(yield* claim(at(20))).toEqual([])
        const [again] = yield* claim(at(31))
        expect(again?.delivery.id).toBe(first!.delivery.id)
        expect(again?.leaseToken).not.toBe(first!.leaseToken)
        const stale = yield* record(
          {
            deliveryId: first!.delivery.id,
            leaseToken: first!.leaseToken,
            attempt: attempt(at(31), 200),
            outcome: { _tag: "Delivered" }
          },
          at(31)
        )
        expect(stale.recorded).toBe(false)
        const done = yield* record(
          {
            deliveryId: again!.delivery.id,
            leaseToken: again!.leaseToken,
            attempt: attempt(at(32), 204),
            outcome: { _tag: "Delivered" }
          },
          at(32)
        )
        expect(done).toEqual({ recorded: true, endpointFailingSince: null })
        expect(yield* claim(at(10_000))).toEqual([])
      })
    )

    test(
      "failed attempts retry when told, mark the endpoint failing from the first, and a success clears it",
      Effect.gen(function* () {
        const store = yield* WebhookStore
        const account = yield* fundedAccount(10 * USD)
        const hook = yield* endpoint(account)
        yield* settled(account, "succeeded", at(1))
        const [c1] = yield* claim(at(1))
        const r1 = yield* record(
          {
            deliveryId: c1!.delivery.id,
            leaseToken: c1!.leaseToken,
            attempt: attempt(at(1), 500),
            outcome: { _tag: "Retry", at: at(6) }
          },
          at(1)
        )
        expect(r1).toEqual({ recorded: true, endpointFailingSince: at(1) })
        expect(yield* claim(at(5))).toEqual([])
        const [c2] = yield* claim(at(6))
        expect(c2?.attemptNumber).toBe(2)
        expect(c2?.delivery.attempts.map((a) => a.statusCode)).toEqual([500])
        const r2 = yield* record(
          {
            deliveryId: c2!.delivery.id,
            leaseToken: c2!.leaseToken,
            attempt: attempt(at(6), null),
            outcome: { _tag: "Retry", at: at(60) }
          },
          at(6)
        )
        expect(r2.endpointFailingSince).toEqual(at(1))
        expect(yield* store.disableFailing(hook.id, at(0), "failing", at(7))).toBeUndefined()
        const [c3] = yield* claim(at(60))
        const r3 = yield* record(
          {
            deliveryId: c3!.delivery.id,
            leaseToken: c3!.leaseToken,
            attempt: attempt(at(60), 200),
            outcome: { _tag: "Delivered" }
          },
          at(60)
        )
        expect(r3.endpointFailingSince).toBeNull()
        expect((yield* store.getEndpoint(account, hook.id))?.failingSince).toBeNull()
        const [logged] = defined(yield* store.listDeliveries(account, hook.id, 10))
        expect(logged).toMatchObject({ status: "delivered", nextAttemptAt: null })
        expect(logged!.attempts).toEqual([attempt(at(1), 500), attempt(at(6), null), attempt(at(60), 200)])
      })
    )

    test(
      "a round writes its outcomes together; each endpoint's streak follows its attempt that finished last",
      Effect.gen(function* () {
        const store = yield* WebhookStore
        const account = yield* fundedAccount(10 * USD)
        const recovering = yield* endpoint(account)
        const failing = yield* endpoint(account)
        yield* settled(account, "succeeded", at(1))
        yield* settled(account, "succeeded", at(1))
        const claims = yield* claim(at(1))
        expect(claims).toHaveLength(4)
        const to = (id: string) => claims.filter((c) => c.delivery.endpointId === id)
        const [r1, r2] = to(recovering.id)
        const [f1, f2] = to(failing.id)
        const finished = (statusCode: number, latencyMs: number): Attempt => ({ ...attempt(at(1), statusCode), latencyMs })
        const recorded = yield* store.recordRound(
          [
            // The delivery finished after the failure: the endpoint is not failing.
            {
              deliveryId: r1!.delivery.id,
              leaseToken: r1!.leaseToken,
              attempt: finished(204, 300),
              outcome: { _tag: "Delivered" }
            },
            {
              deliveryId: r2!.delivery.id,
              leaseToken: r2!.leaseToken,
              attempt: finished(500, 100),
              outcome: { _tag: "Retry", at: at(9) }
            },
            // The failure finished after the delivery: failing since the round.
            {
              deliveryId: f1!.delivery.id,
              leaseToken: f1!.leaseToken,
              attempt: finished(200, 100),
              outcome: { _tag: "Delivered" }
            },
            {
              deliveryId: f2!.delivery.id,
              leaseToken: f2!.leaseToken,
              attempt: finished(503, 900),
              outcome: { _tag: "Retry", at: at(9) }
            },
            // No such delivery (or lease): nothing written.
            { deliveryId: "whdl_none", leaseToken: "lost", attempt: finished(200, 1), outcome: { _tag: "Delivered" } }
          ],
          at(2)
        )
        expect(recorded).toEqual([
          { recorded: true, endpointFailingSince: null },
          { recorded: true, endpointFailingSince: null },
          { recorded: true, endpointFailingSince: at(2) },
          { recorded: true, endpointFailingSince: at(2) },
          { recorded: false, endpointFailingSince: null }
        ])
        expect((yield* store.getEndpoint(account, recovering.id))?.failingSince).toBeNull()
        expect((yield* store.getEndpoint(account, failing.id))?.failingSince).toEqual(at(2))
        const log = defined(yield* store.listDeliveries(account, failing.id, 10))
        expect(log.map((d) => [d.status, d.attempts.map((a) => a.statusCode)]).sort()).toEqual([
          ["delivered", [200]],
          ["pending", [503]]
        ])
        expect(yield* store.recordRound([], at(3))).toEqual([])
      })
    )

    test(
      "a failing endpoint is disabled once, then raises no deliveries, and its pending ones are claimed as disabled",
      Effect.gen(function* () {
        const store = yield* WebhookStore
        const account = yield* fundedAccount(10 * USD)
        const hook = yield* endpoint(account)
        yield* settled(account, "succeeded", at(1))
        yield* settled(account, "succeeded", at(1))
        const [c1, c2] = yield* claim(at(1))
        yield* record(
          { deliveryId: c1!.delivery.id, leaseToken: c1!.leaseToken, attempt: attempt(at(1), 500), outcome: { _tag: "Failed" } },
          at(1)
        )
        yield* record(
          {
            deliveryId: c2!.delivery.id,
            leaseToken: c2!.leaseToken,
            attempt: attempt(at(2), 500),
            outcome: { _tag: "Retry", at: at(3) }
          },
          at(2)
        )
        const [first, second] = yield* Effect.all(
          [
            store.disableFailing(hook.id, at(1), "failing for days", at(4)),
            store.disableFailing(hook.id, at(1), "failing for days", at(4))
          ],
          { concurrency: 2 }
        )
        expect([first, second].filter((e) => e !== undefined).map((e) => e!.disabledReason)).toEqual(["failing for days"])
        const [pending] = yield* claim(at(3))
        expect(pending).toMatchObject({ endpointEnabled: false })
        yield* record({ deliveryId: pending!.delivery.id, leaseToken: pending!.leaseToken, outcome: { _tag: "Failed" } }, at(3))
        yield* settled(account, "succeeded", at(5))
        expect(yield* claim(at(5))).toEqual([])
      })
    )

    test(
      "the delivery log pages newest first; a resend makes a delivery due again with its id and a fresh schedule",
      Effect.gen(function* () {
        const store = yield* WebhookStore
        const account = yield* fundedAccount(10 * USD)
        const other = yield* fundedAccount(0, "other")
        const hook = yield* endpoint(account)
        for (let i = 0; i < 5; i++) yield* settled(account, "succeeded", at(i))
        const claims = yield* claim(at(10))
        for (const c of claims) {
          yield* record(
            { deliveryId: c.delivery.id, leaseToken: c.leaseToken, attempt: attempt(at(10), 410), outcome: { _tag: "Failed" } },
            at(10)
          )
        }
        const page1 = defined(yield* store.listDeliveries(account, hook.id, 2))
        const page2 = defined(yield* store.listDeliveries(account, hook.id, 2, page1[1]!.id))
        const page3 = defined(yield* store.listDeliveries(account, hook.id, 2, page2[1]!.id))
        const ids = [...page1, ...page2, ...page3].map((d) => d.id)
        expect(ids).toHaveLength(5)
        expect(new Set(ids).size).toBe(5)
        expect([...page1, ...page2, ...page3].map((d) => d.occurredAt.getTime())).toEqual(
          [4, 3, 2, 1, 0].map((s) => at(s).getTime())
        )
        expect(yield* store.listDeliveries(other, hook.id, 2)).toBeUndefined()
        expect(yield* store.resend(other, ids[0]!, at(20))).toBeUndefined()
        const resent = defined(yield* store.resend(account, ids[0]!, at(20)))
        expect(resent).toMatchObject({ id: ids[0], status: "pending", nextAttemptAt: at(20) })
        const [due] = yield* claim(at(20))
        expect(due).toMatchObject({ attemptNumber: 1 })
        expect(due!.delivery.id).toBe(ids[0])
        expect(due!.delivery.attempts).toHaveLength(1)
      })
    )

    test(
      "a task's deliveries page newest first: its own webhook's and its endpoints', only for its account",
      Effect.gen(function* () {
        const store = yield* WebhookStore
        const account = yield* fundedAccount(10 * USD)
        const other = yield* fundedAccount(0, "other")
        const hook = yield* endpoint(account)
        const task = yield* settled(account, "failed", at(1), { url: "https://own.example.com/hook", events: null })
        yield* settled(account, "succeeded", at(2), { url: "https://own.example.com/other", events: null })
        const [first] = yield* claim(at(3), 1)
        yield* record(
          { deliveryId: first!.delivery.id, leaseToken: first!.leaseToken, outcome: { _tag: "Retry", at: at(4) } },
          at(3)
        )
        const all = yield* store.listTaskDeliveries(account, task.id, 10)
        expect(all.map((d) => [d.taskId, d.endpointId]).sort()).toEqual(
          [
            [task.id, hook.id],
            [task.id, null]
          ].sort()
        )
        const page1 = yield* store.listTaskDeliveries(account, task.id, 1)
        const page2 = yield* store.listTaskDeliveries(account, task.id, 1, page1[0]!.id)
        expect([...page1, ...page2].map((d) => d.id)).toEqual(all.map((d) => d.id))
        expect(yield* store.listTaskDeliveries(account, task.id, 1, page2[0]!.id)).toEqual([])
        expect(yield* store.listTaskDeliveries(other, task.id, 10)).toEqual([])
      })
    )

    test(
      "purgeFinished deletes deliveries finished before the cutoff, oldest first, at most limit, with their attempts",
      Effect.gen(function* () {
        const store = yield* WebhookStore
        const account = yield* fundedAccount(10 * USD)
        const hook = yield* endpoint(account)
        const finish = (outcome: "Delivered" | "Failed", when: Date) =>
          Effect.gen(function* () {
            yield* settled(account, "succeeded", when)
            const [due] = yield* claim(when, 1)
            yield* record(
              {
                deliveryId: due!.delivery.id,
                leaseToken: due!.leaseToken,
                attempt: attempt(when, outcome === "Delivered" ? 200 : 410),
                outcome: { _tag: outcome }
              },
              when
            )
            return due!.delivery.id
          })
        yield* finish("Failed", at(10))
        const older = yield* finish("Delivered", at(20))
        const recent = yield* finish("Delivered", at(100))
        yield* settled(account, "succeeded", at(1))
        const pending = (yield* claim(at(1), 1))[0]!.delivery.id
        const resent = yield* finish("Failed", at(30))
        yield* store.resend(account, resent, at(40))
        const ids = () =>
          Effect.map(store.listDeliveries(account, hook.id, 100), (log) =>
            defined(log)
              .map((d) => d.id)
              .sort()
          )
        expect(yield* store.purgeFinished(at(50), 1)).toBe(1)
        expect(yield* ids()).toEqual([older, recent, pending, resent].sort())
        expect(yield* store.purgeFinished(at(50), 10)).toBe(1)
        expect(yield* ids()).toEqual([recent, pending, resent].sort())
        expect(yield* store.purgeFinished(at(50), 10)).toBe(0)
        const [kept] = defined(yield* store.listDeliveries(account, hook.id, 100)).filter((d) => d.id === recent)
        expect(kept!.attempts).toHaveLength(1)
      })
    )

    test(
      "the account's signing secret is kept once; deleting an endpoint deletes its deliveries",
      Effect.gen(function* () {
        const store = yield* WebhookStore
        const account = yield* fundedAccount(10 * USD)
        const secrets = yield* Effect.all(
          ["whsec_a", "whsec_b", "whsec_c"].map((candidate) => store.accountSecret(account, candidate, T0)),
          { concurrency: 3 }
        )
        expect(new Set(secrets).size).toBe(1)
        const hook = yield* endpoint(account)
        yield* settled(account, "succeeded", at(1), { url: "https://own.example.com/hook", events: null })
        expect(yield* store.deleteEndpoint(account, hook.id)).toBe(true)
        const claims = yield* claim(at(1))
        expect(claims.map((c) => [c.delivery.endpointId, c.secrets])).toEqual([[null, [secrets[0]]]])
      })
    )
  })
}
