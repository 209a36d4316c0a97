/**
 * Worker processes on the real PostgreSQL (TEST_DATABASE_URL, by default
 * postgres://postgres@127.0.0.1:5432/test): a worker killed mid-task, and two workers draining
 * one queue. The workers are child processes (TaskWorkerProcess.ts) sending tasks to a fake
 * upstream in this process that counts every submission. Needs PostgreSQL (test/Dependencies.ts).
 */
import { spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { once } from "node:events"
import { existsSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { PgStore } from "@taskmeter/storage-pg"
import * as BlobStore from "../../src/media/BlobStore.ts"
import type { AccountId, TaskId } from "../../src/domain/Ids.ts"
import { MediaStore } from "../../src/media/MediaStore.ts"
import { TaskStore } from "../../src/tasks/TaskStore.ts"
import type { TaskRecord } from "../../src/tasks/TaskStore.ts"
import { admission, admitted, allEntries, expectBalances, fundedAccount, newTask, USD } from "../../src/testing/Fixtures.ts"
import * as Dependencies from "../../../../test/Dependencies.ts"
import * as Upstream from "./TaskWorkerUpstream.ts"

const url = Dependencies.databaseUrl
const MODEL = "local-image"
const WORKER = join(import.meta.dirname, "TaskWorkerProcess.ts")

/** A fresh schema with its stores, a blob directory and a fake upstream, all gone with the scope. */
const environment = (initial: (reference: string) => Upstream.JobState) =>
  Effect.gen(function* () {
    const schema = `test_workers_${randomUUID().replaceAll("-", "").slice(0, 16)}`
    yield* Effect.addFinalizer(() =>
      SqlClient.SqlClient.use((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`).pipe(
        Effect.provide(PgStore.client({ url, maxConnections: 1 })),
        Effect.orDie
      )
    )
    const blobDir = yield* Effect.acquireRelease(
      Effect.promise(() => mkdtemp(join(tmpdir(), "taskmeter-worker-blobs-"))),
      (directory) => Effect.promise(() => rm(directory, { recursive: true, force: true }))
    )
    const stores = yield* Layer.build(
      Layer.mergeAll(PgStore.layer({ url, schema, maxConnections: 4 }), BlobStore.layerFileSystem(blobDir))
    )
    const upstream = yield* Effect.acquireRelease(
      Effect.promise(() => Upstream.serve(initial)),
      (upstream) => Effect.promise(() => upstream.close())
    )

    /** Starts a worker process; it is killed when the scope closes if it still runs. */
    const startWorker = (workerId: string, leaseMs: number) =>
      Effect.acquireRelease(
        Effect.callback<ChildProcess, Error>((resume) => {
          const child = spawn(process.execPath, [WORKER], {
            env: {
              ...process.env,
              DATABASE_URL: url,
              SCHEMA: schema,
              BLOB_DIR: blobDir,
              UPSTREAM_URL: upstream.url,
              MODELS: MODEL,
              WORKER_ID: workerId,
              LEASE_MS: String(leaseMs)
            },
            stdio: ["ignore", "pipe", "pipe"]
          })
          let errors = ""
          child.stderr!.on("data", (chunk) => (errors += String(chunk)))
          child.stdout!.on("data", (chunk) => {
            if (String(chunk).includes("ready")) resume(Effect.succeed(child))
          })
          child.on("exit", (code) => resume(Effect.fail(new Error(`worker ${workerId} exited (${code}): ${errors}`))))
        }),
        kill
      )

    return { stores, upstream, blobDir, startWorker }
  })

const kill = (child: ChildProcess) =>
  Effect.promise(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, "exit")
    child.kill("SIGKILL")
    await exited
  })

/** Reads a task through the test's own store until `done` holds, or dies after `timeoutMs`. */
const waitFor = (accountId: AccountId, taskId: TaskId, done: (task: TaskRecord) => boolean, timeoutMs = 20_000) =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    const until = Date.now() + timeoutMs
    for (;;) {
      const task = yield* store.get(accountId, taskId)
      if (task !== undefined && done(task)) return task
      if (Date.now() > until) return yield* Effect.die(new Error(`task ${taskId} stayed ${task?.status}`))
      yield* Effect.sleep(20)
    }
  })

const admitOne = (accountId: AccountId) =>
  admitted(
    admission(
      newTask(accountId, {
        model: MODEL,
        createdAt: new Date(),
        deadlineAt: new Date(Date.now() + 3_600_000)
      })
    )
  )

describe("TaskWorker processes on PostgreSQL", () => {
  for (const moment of ["running", "submitting"] as const) {
    it.live(
      `a worker killed after the upstream accepted (task ${moment}): completed once, submitted once, charged once`,
      () =>
        Effect.gen(function* () {
          const { startWorker, stores, upstream, blobDir } = yield* environment(() => "pending")
          const use = <A, E>(effect: Effect.Effect<A, E, PgStore.Stores | BlobStore.BlobStore>) => Effect.provide(effect, stores)
          const accountId = yield* use(fundedAccount(10 * USD))
          const task = yield* use(admitOne(accountId))
          // "submitting": the upstream takes the job but its answer never reaches the worker.
          upstream.holdSubmitResponses = moment === "submitting"

          const first = yield* startWorker("first", 1_000)
          yield* use(waitFor(accountId, task.id, (t) => t.status === moment && upstream.submissions.get(task.id) === 1))
          yield* kill(first)
          upstream.holdSubmitResponses = false
          upstream.finish(task.id, "succeeded")

          yield* startWorker("second", 1_000)
          const done = yield* use(waitFor(accountId, task.id, (t) => t.status === "succeeded"))
          expect(upstream.submissions.get(task.id)).toBe(1)
          expect(done.attempts).toBe(2)
          expect(done.chargedMicros).toBe(USD)
          yield* use(expectBalances(accountId, { balance: 9 * USD, reserved: 0 }))
          const charges = (yield* use(allEntries(accountId))).filter(
            (entry) => entry.taskId === task.id && entry.kind === "charge"
          )
          expect(charges).toHaveLength(1)
          const result = yield* use(MediaStore.use((media) => media.getResult(accountId, done.assets[0]!.resultId!)))
          expect(existsSync(join(blobDir, result!.blobKey))).toBe(true)
        }),
      60_000
    )
  }

  it.live(
    "a cancel recorded by another process reaches the worker holding the lease: canceled upstream, released",
    () =>
      Effect.gen(function* () {
        const { startWorker, stores, upstream } = yield* environment(() => "pending")
        const use = <A, E>(effect: Effect.Effect<A, E, PgStore.Stores | BlobStore.BlobStore>) => Effect.provide(effect, stores)
        const accountId = yield* use(fundedAccount(10 * USD))
        const task = yield* use(admitOne(accountId))
        yield* startWorker("holder", 5_000)
        yield* use(waitFor(accountId, task.id, (t) => t.status === "running"))
        const requested = yield* use(TaskStore.use((store) => store.cancel(accountId, task.id, new Date())))
        expect(requested?._tag).toBe("Requested")
        const done = yield* use(waitFor(accountId, task.id, (t) => t.status === "failed"))
        expect(done.errorCode).toBe("CANCELED")
        expect(upstream.cancels.get(task.id)).toBe(1)
        yield* use(expectBalances(accountId, { balance: 10 * USD, reserved: 0 }))
        const kinds = (yield* use(allEntries(accountId))).filter((entry) => entry.taskId === task.id).map((entry) => entry.kind)
        expect(kinds.sort()).toEqual(["release", "reserve"])
      }),
    60_000
  )

  it.live(
    "two worker processes drain 1,000 tasks: each runs once, succeeded ones charged once, failed ones released",
    () =>
      Effect.gen(function* () {
        // Jobs whose reference ends in 0-3 fail upstream; the others succeed at once.
        const { startWorker, stores, upstream } = yield* environment((reference) =>
          /[0-3]$/.test(reference) ? "failed" : "succeeded"
        )
        const use = <A, E>(effect: Effect.Effect<A, E, PgStore.Stores | BlobStore.BlobStore>) => Effect.provide(effect, stores)
        const accountId = yield* use(fundedAccount(2_000 * USD))
        const ids = yield* use(
          Effect.forEach(Array.from({ length: 1_000 }), () => Effect.map(admitOne(accountId), (t) => t.id), {
            concurrency: 8
          })
        )

        yield* Effect.all([startWorker("one", 5_000), startWorker("two", 5_000)], { concurrency: 2 })
        const tasks = yield* use(
          Effect.forEach(ids, (id) => waitFor(accountId, id, (t) => t.status === "succeeded" || t.status === "failed", 60_000))
        )

        expect(upstream.submissions.size).toBe(1_000)
        expect([...upstream.submissions.values()].every((count) => count === 1)).toBe(true)
        const entries = yield* use(allEntries(accountId))
        const kindsByTask = new Map<string, Array<string>>()
        for (const entry of entries) {
          if (entry.taskId !== null && entry.taskId !== undefined) {
            kindsByTask.set(entry.taskId, [...(kindsByTask.get(entry.taskId) ?? []), entry.kind].sort())
          }
        }
        let succeeded = 0
        for (const task of tasks) {
          const expected = /[0-3]$/.test(task.id) ? "failed" : "succeeded"
          expect(task.status).toBe(expected)
          expect(kindsByTask.get(task.id)).toEqual(expected === "succeeded" ? ["charge", "reserve"] : ["release", "reserve"])
          if (expected === "succeeded") succeeded++
        }
        expect(succeeded).toBeGreaterThan(600)
        yield* use(expectBalances(accountId, { balance: 2_000 * USD - succeeded * USD, reserved: 0 }))
      }),
    120_000
  )
})
