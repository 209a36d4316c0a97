/**
 * Concurrency on the real PostgreSQL: two stores on one schema, each with its own pool of 16
 * connections, stand for two server processes. Every race runs for real, in parallel, and
 * alternates between the two stores.
 */
import { Effect, Exit, Fiber, Layer } from "effect"
import type { Context } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { AccountStore, Ids, LedgerStore, Money, TaskStore } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import { dropSchemaAfter, schemaName, url } from "./TestDatabase.ts"

const USD = 1_000_000
const T0 = new Date("2030-01-01T00:00:00.000Z")
const POOL = 16

type Process = Context.Context<PgStore.Stores>

/** Two stores ("processes") on one fresh schema, started together, for the scope of the test. */
const twoProcesses = Effect.gen(function* () {
  const schema = schemaName()
  yield* Layer.build(dropSchemaAfter(schema))
  const start = Layer.build(PgStore.layer({ url, schema, maxConnections: POOL }))
  return yield* Effect.all([start, start], { concurrency: 2 })
})

const on =
  (process: Process) =>
  <A, E>(effect: Effect.Effect<A, E, PgStore.Stores>) =>
    Effect.provide(effect, process)

/** `count` effects at once, the even ones on the first process and the odd ones on the second. */
const race = <A, E>(
  processes: readonly [Process, Process],
  count: number,
  make: (index: number) => Effect.Effect<A, E, PgStore.Stores>
) =>
  Effect.all(
    Array.from({ length: count }, (_, index) => on(processes[index % 2])(make(index))),
    { concurrency: "unbounded" }
  )

const newTask = (accountId: Ids.AccountId): TaskStore.NewTask => ({
  id: Ids.makeTaskId(),
  accountId,
  apiKeyId: null,
  model: "race",
  input: { prompt: "race" },
  priceMicros: Money.micros(USD),
  unitMicros: Money.micros(USD),
  quantity: 1,
  settlement: "fixed",
  createdAt: T0,
  deadlineAt: new Date(T0.getTime() + 3_600_000)
})

const admit = (task: TaskStore.NewTask, idempotencyKey = `key-${task.id}`) =>
  TaskStore.TaskStore.use((store) =>
    store.admit({
      task,
      idempotencyKey,
      fingerprint: "the-same-request",
      idempotencyExpiresAt: new Date(T0.getTime() + 86_400_000),
      limits: { submissionsPerMinute: 1_000_000, maxUnfinishedTasks: 1_000_000, keyUsageLimit: null }
    })
  )

const fundedAccount = (credits: number) =>
  Effect.gen(function* () {
    const account = yield* AccountStore.AccountStore.use((store) =>
      store.createAccount({ id: Ids.makeAccountId(), name: "race", createdAt: T0 })
    )
    yield* LedgerStore.LedgerStore.use((store) => store.grant({ accountId: account.id, amountMicros: credits, note: "top-up" }))
    return account.id
  })

const balances = (accountId: Ids.AccountId) =>
  Effect.map(
    LedgerStore.LedgerStore.use((store) => store.balances(accountId)),
    (found) => found!
  )

const entriesOf = (accountId: Ids.AccountId) =>
  Effect.map(
    LedgerStore.LedgerStore.use((store) => store.entries(accountId, { limit: 1000 })),
    (page) => page!.entries
  )

const audit = LedgerStore.LedgerStore.use((store) => store.audit)

const tally = (tags: ReadonlyArray<string>) =>
  tags.reduce<Record<string, number>>((counts, tag) => ({ ...counts, [tag]: (counts[tag] ?? 0) + 1 }), {})

describe("storage-pg under concurrency (PostgreSQL)", () => {
  it.live("200 parallel 1 USD admissions on 50 USD admit exactly 50 and leave nothing available", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const processes = yield* twoProcesses
        const accountId = yield* on(processes[0])(fundedAccount(50 * USD))
        const results = yield* race(processes, 200, () => admit(newTask(accountId)))
        expect(tally(results.map((result) => result._tag))).toEqual({ Admitted: 50, InsufficientCredits: 150 })
        yield* on(processes[1])(
          Effect.gen(function* () {
            expect(yield* balances(accountId)).toEqual({
              balanceMicros: 50 * USD,
              reservedMicros: 50 * USD,
              availableMicros: 0,
              paymentReview: false
            })
            const reserves = (yield* entriesOf(accountId)).filter((entry) => entry.kind === "reserve")
            expect(reserves.length).toBe(50)
            expect(yield* audit).toEqual([])
          })
        )
      })
    )
  )

  it.live("100 parallel admissions with one Idempotency-Key create one task and one reservation", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const processes = yield* twoProcesses
        const accountId = yield* on(processes[0])(fundedAccount(500 * USD))
        const results = yield* race(processes, 100, () => admit(newTask(accountId), "one-key"))
        expect(tally(results.map((result) => result._tag))).toEqual({ Admitted: 1, Replayed: 99 })
        const ids = new Set(
          results.map((result) => (result._tag === "Admitted" || result._tag === "Replayed" ? result.task.id : ""))
        )
        expect(ids.size).toBe(1)
        yield* on(processes[1])(
          Effect.gen(function* () {
            expect((yield* balances(accountId)).reservedMicros).toBe(USD)
            expect((yield* entriesOf(accountId)).filter((entry) => entry.kind === "reserve").length).toBe(1)
            expect((yield* TaskStore.TaskStore.use((store) => store.list(accountId, 1000))).length).toBe(1)
            expect(yield* audit).toEqual([])
          })
        )
      })
    )
  )

  it.live("parallel charge and release of one task move money once", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const processes = yield* twoProcesses
        const accountId = yield* on(processes[0])(fundedAccount(100 * USD))
        const claims = yield* on(processes[0])(
          Effect.gen(function* () {
            for (let i = 0; i < 20; i++) yield* admit(newTask(accountId))
            return yield* TaskStore.TaskStore.use((store) =>
              store.claim({ workerId: "w", limit: 100, leaseMs: 600_000, now: T0 })
            )
          })
        )
        expect(claims.length).toBe(20)
        const outcomes = yield* race(processes, claims.length * 2, (index) => {
          const claim = claims[Math.floor(index / 2)]
          const base = { taskId: claim.task.id, leaseToken: claim.leaseToken, from: "queued" as const, now: T0, keepLease: false }
          return TaskStore.TaskStore.use((store) =>
            store.transition(
              index % 2 === 0 ? { ...base, to: "failed" } : { ...base, to: "failed", errorCode: "DEADLINE_EXCEEDED" }
            )
          )
        })
        // Each task: one winner, one loser.
        for (let i = 0; i < claims.length; i++) {
          expect([outcomes[2 * i]._tag, outcomes[2 * i + 1]._tag].sort()).toEqual(["Done", "LeaseLost"])
        }

        // The same race between a charge and a release, from running.
        const running = yield* on(processes[0])(
          Effect.gen(function* () {
            const store = yield* TaskStore.TaskStore
            for (let i = 0; i < 20; i++) yield* admit(newTask(accountId))
            const claimed = yield* store.claim({ workerId: "w", limit: 100, leaseMs: 600_000, now: T0 })
            for (const claim of claimed) {
              for (const [from, to] of [
                ["queued", "submitting"],
                ["submitting", "running"]
              ] as const) {
                yield* store.transition({
                  taskId: claim.task.id,
                  leaseToken: claim.leaseToken,
                  from,
                  to,
                  now: T0,
                  keepLease: true
                })
              }
            }
            return claimed
          })
        )
        const settled = yield* race(processes, running.length * 2, (index) => {
          const claim = running[Math.floor(index / 2)]
          const base = {
            taskId: claim.task.id,
            leaseToken: claim.leaseToken,
            from: "running" as const,
            now: T0,
            keepLease: false
          }
          return TaskStore.TaskStore.use((store) =>
            store.transition(
              index % 2 === 0 ? { ...base, to: "succeeded", chargeMicros: Money.micros(USD) } : { ...base, to: "failed" }
            )
          )
        })
        let charged = 0
        for (let i = 0; i < running.length; i++) {
          const pair = [settled[2 * i], settled[2 * i + 1]]
          expect(pair.map((result) => result._tag).sort()).toEqual(["Done", "LeaseLost"])
          if (pair[0]._tag === "Done") charged++
        }

        yield* on(processes[1])(
          Effect.gen(function* () {
            expect(yield* balances(accountId)).toEqual({
              balanceMicros: (100 - charged) * USD,
              reservedMicros: 0,
              availableMicros: (100 - charged) * USD,
              paymentReview: false
            })
            const settlements = (yield* entriesOf(accountId)).filter(
              (entry) => entry.kind === "charge" || entry.kind === "release"
            )
            expect(settlements.length).toBe(40)
            expect(new Set(settlements.map((entry) => entry.taskId)).size).toBe(40)
            expect(yield* audit).toEqual([])
          })
        )
      })
    )
  )

  it.live("an admission the database refuses fails alone, not the others written with it", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const processes = yield* twoProcesses
        const accountId = yield* on(processes[0])(fundedAccount(100 * USD))
        // Admissions are written in batches; one of these names an account that does not exist.
        const exits = yield* race([processes[0], processes[0]], 40, (index) =>
          Effect.exit(admit(newTask(index === 17 ? Ids.makeAccountId() : accountId)))
        )
        expect(exits.filter(Exit.isFailure).length).toBe(1)
        expect(Exit.isFailure(exits[17])).toBe(true)
        const tags = exits.flatMap((exit) => (Exit.isSuccess(exit) ? [exit.value._tag] : []))
        expect(tally(tags)).toEqual({ Admitted: 39 })
        yield* on(processes[1])(
          Effect.gen(function* () {
            expect((yield* balances(accountId)).reservedMicros).toBe(39 * USD)
            expect(yield* audit).toEqual([])
          })
        )
      })
    )
  )

  it.live("120 parallel authentications of one key count exactly 120, each count once", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const processes = yield* twoProcesses
        const accountId = yield* on(processes[0])(fundedAccount(USD))
        const key: AccountStore.ApiKeyRecord = {
          id: Ids.makeApiKeyId(),
          accountId,
          name: "race",
          displayPrefix: "tm_race",
          hash: "a".repeat(64),
          scopes: ["jobs:create"],
          createdAt: T0,
          revokedAt: null,
          rateLimitPerMinute: null,
          usageLimit: null,
          usageCount: 0
        }
        yield* on(processes[0])(AccountStore.AccountStore.use((store) => store.insertApiKey(key)))
        const authenticate = (hash: string) => AccountStore.AccountStore.use((store) => store.authenticate(hash, T0))
        // An unknown hash among them, written in one batch with some of them, is answered undefined.
        const results = yield* race(processes, 121, (index) => authenticate(index === 60 ? "0".repeat(64) : key.hash))
        expect(results[60]).toBeUndefined()
        const found = results.filter((result) => result !== undefined)
        expect(found.length).toBe(120)
        expect(found.every((result) => result.key.id === key.id)).toBe(true)
        expect(found.map((result) => result.requestsInWindow).sort((a, b) => a - b)).toEqual(
          Array.from({ length: 120 }, (_, index) => index + 1)
        )
        expect((yield* on(processes[1])(authenticate(key.hash)))?.requestsInWindow).toBe(121)
      })
    )
  )

  it.live("parallel claims never lease one task twice", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const processes = yield* twoProcesses
        const accountId = yield* on(processes[0])(fundedAccount(1000 * USD))
        yield* race(processes, 300, () => admit(newTask(accountId)))
        const claimAll = (worker: number) =>
          TaskStore.TaskStore.use((store) =>
            Effect.gen(function* () {
              const mine: Array<string> = []
              for (;;) {
                const batch = yield* store.claim({ workerId: `w${worker}`, limit: 7, leaseMs: 600_000, now: T0 })
                if (batch.length === 0) return mine
                mine.push(...batch.map((claim) => claim.task.id))
              }
            })
          )
        const perWorker = yield* race(processes, 24, claimAll)
        const all = perWorker.flat()
        expect(all.length).toBe(300)
        expect(new Set(all).size).toBe(300)
        expect(perWorker.filter((claimed) => claimed.length > 0).length).toBeGreaterThan(1)
      })
    )
  )

  it.live("an admission in one process wakes a worker waiting in another (LISTEN/NOTIFY)", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const [first, second] = yield* twoProcesses
        const accountId = yield* on(first)(fundedAccount(USD))
        const waiting = yield* Effect.forkChild(on(second)(TaskStore.TaskStore.use((store) => store.awaitWork(600_000))))
        yield* Effect.sleep("200 millis")
        const started = Date.now()
        yield* on(first)(admit(newTask(accountId)))
        yield* Fiber.join(waiting).pipe(Effect.timeout("5 seconds"))
        expect(Date.now() - started).toBeLessThan(5_000)
      })
    )
  )

  it.live("a task settled in one process wakes a caller waiting on it in another (LISTEN/NOTIFY)", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const [first, second] = yield* twoProcesses
        const accountId = yield* on(first)(fundedAccount(USD))
        const task = yield* on(first)(admit(newTask(accountId)))
        if (task._tag !== "Admitted") throw new Error(task._tag)
        const store = yield* on(second)(TaskStore.TaskStore.use(Effect.succeed))
        const settled = yield* store.watchStatus(task.task.id)
        const waiting = yield* Effect.forkChild(settled)
        yield* Effect.sleep("200 millis")
        const started = Date.now()
        yield* on(first)(TaskStore.TaskStore.use((store) => store.cancel(accountId, task.task.id, T0)))
        yield* Fiber.join(waiting).pipe(Effect.timeout("5 seconds"))
        expect(Date.now() - started).toBeLessThan(5_000)
      })
    )
  )

  it.live("a move in one process reaches a watcher in another with its status; the end says only that it ended", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const [first, second] = yield* twoProcesses
        const accountId = yield* on(first)(fundedAccount(USD))
        const task = yield* on(first)(admit(newTask(accountId)))
        if (task._tag !== "Admitted") throw new Error(task._tag)
        const id = task.task.id
        const store = yield* on(second)(TaskStore.TaskStore.use(Effect.succeed))
        const changed = yield* store.watchStatus(id)
        const moved = yield* on(first)(
          TaskStore.TaskStore.use((store) =>
            Effect.gen(function* () {
              const [claim] = yield* store.claim({ workerId: "w", limit: 1, leaseMs: 60_000, now: T0 })
              const step = { taskId: id, leaseToken: claim?.leaseToken ?? "", now: T0, keepLease: true } as const
              yield* store.transition({ ...step, from: "queued", to: "submitting" })
              yield* store.transition({ ...step, from: "submitting", to: "running", upstreamRef: "up-1" })
              return step
            })
          )
        )
        yield* Effect.sleep("300 millis")
        // Both moves landed before the await: the furthest status, whether one NOTIFY carried them or two.
        expect(yield* changed.pipe(Effect.timeout("5 seconds"))).toBe("running")
        yield* on(first)(
          TaskStore.TaskStore.use((store) =>
            store.transition({ ...moved, from: "running", to: "failed", errorCode: "UPSTREAM_FAILED", keepLease: false })
          )
        )
        // succeeded and failed share a sequence: the watcher reads the task.
        expect(yield* changed.pipe(Effect.timeout("5 seconds"))).toBeUndefined()
      })
    )
  )

  it.live("a progress change in one process wakes a watcher in another without a status; it reads the progress", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const [first, second] = yield* twoProcesses
        const accountId = yield* on(first)(fundedAccount(USD))
        const task = yield* on(first)(admit(newTask(accountId)))
        if (task._tag !== "Admitted") throw new Error(task._tag)
        const id = task.task.id
        yield* on(first)(
          TaskStore.TaskStore.use((store) =>
            Effect.gen(function* () {
              const [claim] = yield* store.claim({ workerId: "w", limit: 1, leaseMs: 60_000, now: T0 })
              const step = { taskId: id, leaseToken: claim?.leaseToken ?? "", now: T0, keepLease: true } as const
              yield* store.transition({ ...step, from: "queued", to: "submitting" })
              yield* store.transition({ ...step, from: "submitting", to: "running", upstreamRef: "up-1" })
            })
          )
        )
        yield* Effect.sleep("300 millis")
        const store = yield* on(second)(TaskStore.TaskStore.use(Effect.succeed))
        const changed = yield* store.watchStatus(id)
        const waiting = yield* Effect.forkChild(changed)
        yield* Effect.sleep("200 millis")
        expect(yield* on(first)(TaskStore.TaskStore.use((store) => store.noteProgress(id, 55)))).toBe(true)
        expect(yield* Fiber.join(waiting).pipe(Effect.timeout("5 seconds"))).toBeUndefined()
        expect((yield* store.get(accountId, id))?.progress).toBe(55)
      })
    )
  )
})
