import { Effect, Fiber, Layer } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { BlobStore } from "../../src/media/BlobStore.ts"
import * as MediaReference from "../../src/media/MediaReference.ts"
import { MediaStore } from "../../src/media/MediaStore.ts"
import * as MediaUrls from "../../src/media/MediaUrls.ts"
import { micros } from "../../src/domain/Money.ts"
import * as ErrorCode from "../../src/domain/TaskErrorCode.ts"
import type { PollResult } from "../../src/tasks/Provider.ts"
import { StoreRefused } from "../../src/domain/StoreError.ts"
import * as TaskWorker from "../../src/tasks/TaskWorker.ts"
import { TaskStore } from "../../src/tasks/TaskStore.ts"
import type { TaskRecord } from "../../src/tasks/TaskStore.ts"
import { entriesOfTask, expectBalances, expectBooksBalance, USD } from "../../src/testing/Fixtures.ts"
import {
  admitTask,
  fakeProvider,
  fast,
  png,
  read,
  SECRET,
  services,
  upstreamError,
  waitFor,
  waitForStatus
} from "./TaskWorkerSupport.ts"

const finished = (task: TaskRecord) => task.status === "succeeded" || task.status === "failed"

const kindsOf = (entries: ReadonlyArray<{ readonly kind: string; readonly amountMicros: number }>) =>
  entries.map((entry) => `${entry.kind} ${entry.amountMicros}`).sort()

const bytesOf = (body: AsyncIterable<Uint8Array>) =>
  Effect.promise(async () => {
    const chunks: Array<Uint8Array> = []
    for await (const chunk of body) chunks.push(chunk)
    return Buffer.concat(chunks)
  })

describe("TaskWorker", () => {
  it.live("runs a task to succeeded, stores its result and charges it once", () => {
    const fake = fakeProvider({
      submit: [{ _tag: "Accepted", upstreamId: "job-7" }],
      poll: [{ _tag: "Pending" }, { _tag: "Pending", progress: 0.5 }, { _tag: "Succeeded", outputs: [png(3)] }]
    })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitFor(accountId, task.id, finished)

      expect(done.status).toBe("succeeded")
      expect(done.upstreamRef).toBe("job-7")
      expect(done.chargedMicros).toBe(USD)
      expect(done.errorCode).toBeNull()
      expect(fake.calls.submit).toEqual([{ model: task.model, input: task.input, reference: task.id }])
      expect(fake.calls.poll.map((call) => call.upstreamId)).toEqual(["job-7", "job-7", "job-7"])
      yield* expectBalances(accountId, { balance: 9 * USD, reserved: 0 })
      expect(kindsOf(yield* entriesOfTask(accountId, task.id))).toEqual([`charge ${USD}`, `reserve ${USD}`])

      expect(done.assets).toHaveLength(1)
      const asset = done.assets[0]!
      expect(asset).toMatchObject({ type: "image", mimeType: "image/png", metadata: { width: 1, height: 1 } })
      const result = yield* MediaStore.use((media) => media.getResult(accountId, asset.resultId!))
      expect(result).toMatchObject({ taskId: task.id, contentType: "image/png", sizeBytes: 9 })
      const body = yield* BlobStore.use((blobs) => blobs.read(result!.blobKey))
      expect([...(yield* bytesOf(body!))]).toEqual([...png(3).bytes!])
      yield* expectBooksBalance
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("records an upstream that completes at submit without polling", () => {
    const fake = fakeProvider({
      submit: [{ _tag: "Completed", upstreamId: "sync-1", outputs: [png(1), png(2)] }]
    })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done.status).toBe("succeeded")
      expect(done.upstreamRef).toBe("sync-1")
      expect(done.assets).toHaveLength(2)
      expect(fake.calls.poll).toHaveLength(0)
      yield* expectBalances(accountId, { balance: 9 * USD, reserved: 0 })
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("fails a task the upstream failed and releases its reservation", () => {
    const fake = fakeProvider({
      poll: [{ _tag: "Pending" }, { _tag: "Failed", errorCode: "UPSTREAM_CONTENT_POLICY", message: "refused" }]
    })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done).toMatchObject({ status: "failed", errorCode: "UPSTREAM_CONTENT_POLICY", chargedMicros: null, assets: [] })
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: 0 })
      expect(kindsOf(yield* entriesOfTask(accountId, task.id))).toEqual([`release ${USD}`, `reserve ${USD}`])
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("charges per delivered image when fewer were delivered than quoted", () => {
    const fake = fakeProvider({ poll: [{ _tag: "Succeeded", outputs: [png(1), png(2), png(3)] }] })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask({
        priceMicros: micros(1_000_000),
        unitMicros: micros(250_000),
        quantity: 4,
        settlement: "perDeliveredUnit"
      })
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done.status).toBe("succeeded")
      expect(done.chargedMicros).toBe(750_000)
      expect(done.assets).toHaveLength(3)
      yield* expectBalances(accountId, { balance: 10 * USD - 750_000, reserved: 0 })
      expect(kindsOf(yield* entriesOfTask(accountId, task.id))).toEqual(["charge 750000", "release 250000", "reserve 1000000"])
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("retries 429s and transient errors without failing the task", () => {
    const fake = fakeProvider({
      submit: [
        upstreamError("RateLimited", { retryAfterMs: 30, status: 429 }),
        upstreamError("Retryable", { status: 503 }),
        { _tag: "Accepted", upstreamId: "job-9" }
      ],
      poll: [
        upstreamError("RateLimited", { status: 429 }),
        upstreamError("OutcomeUnknown"),
        {
          _tag: "Succeeded",
          outputs: [png()]
        }
      ]
    })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      const started = Date.now()
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done.status).toBe("succeeded")
      expect(fake.calls.submit).toHaveLength(3)
      expect(fake.calls.submit.every((call) => call.reference === task.id)).toBe(true)
      expect(fake.calls.poll).toHaveLength(3)
      // The upstream's Retry-After was waited out.
      expect(Date.now() - started).toBeGreaterThanOrEqual(30)
      yield* expectBalances(accountId, { balance: 9 * USD, reserved: 0 })
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("fails a task the upstream refuses (terminal 4xx) and releases it", () => {
    const fake = fakeProvider({
      submit: [upstreamError("Terminal", { errorCode: "UPSTREAM_REJECTED_INPUT", status: 422 })]
    })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done).toMatchObject({ status: "failed", errorCode: "UPSTREAM_REJECTED_INPUT" })
      expect(fake.calls.submit).toHaveLength(1)
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: 0 })
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("fails a running task at its deadline, cancels it upstream and releases it", () => {
    const fake = fakeProvider({ poll: [{ _tag: "Pending" }], cancel: true })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask({ deadlineAt: new Date(Date.now() + 200) })
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done).toMatchObject({ status: "failed", errorCode: ErrorCode.DeadlineExceeded })
      expect(done.updatedAt.getTime()).toBeGreaterThanOrEqual(task.deadlineAt.getTime())
      expect(fake.calls.cancel).toEqual([{ model: task.model, upstreamId: "up-1" }])
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: 0 })
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("fails a task still rate limited at its deadline", () => {
    const fake = fakeProvider({ submit: [upstreamError("RateLimited", { status: 429 })] })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask({ deadlineAt: new Date(Date.now() + 150) })
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done).toMatchObject({ status: "failed", errorCode: ErrorCode.DeadlineExceeded })
      expect(fake.calls.submit.length).toBeGreaterThan(1)
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: 0 })
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("fails a queued task already past its deadline without sending it", () => {
    const fake = fakeProvider({})
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask({ deadlineAt: new Date(Date.now() - 1) })
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done).toMatchObject({ status: "failed", errorCode: ErrorCode.DeadlineExceeded })
      expect(fake.calls.submit).toHaveLength(0)
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("keeps the reservation of a submission with an unknown outcome and never resends it", () => {
    const fake = fakeProvider({ submit: [upstreamError("OutcomeUnknown")] })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitForStatus(accountId, task.id, "reconciliation_required")
      expect(done.errorCode).toBe(ErrorCode.OutcomeUnknown)
      expect(done.chargedMicros).toBeNull()
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: USD })
      // Well past a lease length: no worker takes the task up again.
      yield* Effect.sleep(fast.leaseMs! * 2)
      expect(fake.calls.submit).toHaveLength(1)
      expect((yield* read(accountId, task.id)).status).toBe("reconciliation_required")
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("a stopped worker gives its leases up, so another worker resumes the task at once", () => {
    const fake = fakeProvider({ poll: [() => Effect.never] })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      const worker = yield* Effect.forkScoped(TaskWorker.run(fast))
      yield* waitForStatus(accountId, task.id, "running")
      yield* Fiber.interrupt(worker)
      // Without giving up, the lease would hold the task for up to leaseMs more.
      const store = yield* TaskStore
      const claims = yield* store.claim({ workerId: "next", limit: 1, leaseMs: 60_000, now: new Date() })
      expect(claims.map((claim) => [claim.task.id, claim.task.status, claim.task.upstreamRef])).toEqual([
        [task.id, "running", "up-1"]
      ])
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("fails a success that delivered nothing", () => {
    const fake = fakeProvider({ poll: [{ _tag: "Succeeded", outputs: [] }] })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done).toMatchObject({ status: "failed", errorCode: ErrorCode.NoOutput })
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: 0 })
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("downloads url results, keeps text results as text, and refuses files over the cap", () => {
    const served = new Map<string, Uint8Array>([
      ["https://cdn.upstream.test/a.mp3", new Uint8Array(100).fill(7)],
      ["https://cdn.upstream.test/big.mp3", new Uint8Array(5000)]
    ])
    const downloads: Array<string> = []
    const fetch: typeof globalThis.fetch = async (url) => {
      downloads.push(String(url))
      const body = served.get(String(url))
      return body === undefined ? new Response("gone", { status: 404 }) : new Response(body)
    }
    const fake = fakeProvider({
      submit: [
        { _tag: "Accepted", upstreamId: "song-1" },
        { _tag: "Accepted", upstreamId: "song-2" }
      ],
      poll: [
        (call) =>
          Effect.succeed({
            _tag: "Succeeded",
            outputs:
              fake.calls.poll[call]!.upstreamId === "song-1"
                ? [
                    { type: "audio", url: "https://cdn.upstream.test/a.mp3", contentType: "audio/mpeg" },
                    { type: "text", text: "la la la", contentType: "text/plain; charset=utf-8" }
                  ]
                : [{ type: "audio", url: "https://cdn.upstream.test/big.mp3", contentType: "audio/mpeg" }]
          })
      ]
    })
    return Effect.gen(function* () {
      const first = yield* admitTask()
      const second = yield* admitTask({ createdAt: new Date(Date.now() + 1) }, first.accountId)
      yield* Effect.forkScoped(TaskWorker.run({ ...fast, fetch, maxResultBytes: 1000 }))
      const song = yield* waitFor(first.accountId, first.task.id, finished)
      const big = yield* waitFor(first.accountId, second.task.id, finished)

      expect(song.status).toBe("succeeded")
      expect(song.assets.map((asset) => asset.type)).toEqual(["audio", "text"])
      expect(song.assets[1]).toMatchObject({ text: "la la la" })
      const result = yield* MediaStore.use((media) => media.getResult(first.accountId, song.assets[0]!.resultId!))
      expect(result).toMatchObject({ contentType: "audio/mpeg", sizeBytes: 100 })

      expect(big).toMatchObject({ status: "failed", errorCode: ErrorCode.ResultTooLarge })
      expect(downloads).toContain("https://cdn.upstream.test/big.mp3")
      yield* expectBalances(first.accountId, { balance: 9 * USD, reserved: 0 })
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("tries a failed result download again instead of failing the task", () => {
    let attempts = 0
    const fetch: typeof globalThis.fetch = async () =>
      ++attempts < 3 ? new Response("busy", { status: 503 }) : new Response(new Uint8Array([1, 2, 3]))
    const fake = fakeProvider({
      poll: [
        { _tag: "Succeeded", outputs: [{ type: "video", url: "https://cdn.upstream.test/v.mp4", contentType: "video/mp4" }] }
      ]
    })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* Effect.forkScoped(TaskWorker.run({ ...fast, fetch }))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done.status).toBe("succeeded")
      expect(attempts).toBe(3)
      const result = yield* MediaStore.use((media) => media.getResult(accountId, done.assets[0]!.resultId!))
      expect(result?.sizeBytes).toBe(3)
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("sends uploads to the upstream as signed links, never as media references", () => {
    const model = "epsilon-3-1-fast-image-to-video-channel-low-price"
    const fake = fakeProvider({ models: [model] })
    const upload = MediaReference.make()
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask({
        model,
        input: { prompt: "waves", imageUrls: [upload, "https://example.com/b.png"] }
      })
      yield* Effect.forkScoped(TaskWorker.run(fast))
      yield* waitFor(accountId, task.id, finished)

      const sent = fake.calls.submit[0]!.input.imageUrls as ReadonlyArray<string>
      expect(sent[1]).toBe("https://example.com/b.png")
      expect(sent[0]).toMatch(
        new RegExp(`^https://api\\.test/api/v1/media-links/${MediaReference.uuidOf(upload)}\\?acct=.+&exp=\\d+&sig=`)
      )
      const link = sent[0]!.slice("https://api.test".length)
      expect(MediaUrls.verify(SECRET, link, new Date())).toEqual({ _tag: "Valid", accountId, reference: upload })
      expect(sent[0]).not.toContain(upload)
      // The stored task keeps the reference, not the short-lived link.
      expect((yield* read(accountId, task.id)).input.imageUrls).toEqual([upload, "https://example.com/b.png"])
    }).pipe(Effect.provide(services([fake.adapter])))
  })

  it.live("runs no more of a model's tasks at once than its limit allows", () => {
    let under = 0
    let most = 0
    const polls = new Map<string, number>()
    // Each job is pending on its first poll and done on its second.
    const fake = fakeProvider({
      submit: [
        (call) =>
          Effect.sync(() => {
            under++
            most = Math.max(most, under)
            return { _tag: "Accepted", upstreamId: `job-${fake.calls.submit[call]!.reference}` } as const
          })
      ],
      poll: [
        (call) =>
          Effect.suspend((): Effect.Effect<PollResult> => {
            const job = fake.calls.poll[call]!.upstreamId
            const seen = (polls.get(job) ?? 0) + 1
            polls.set(job, seen)
            if (seen === 1) return Effect.as(Effect.sleep(20), { _tag: "Pending" })
            under--
            return Effect.succeed({ _tag: "Succeeded", outputs: [png()] })
          })
      ]
    })
    return Effect.gen(function* () {
      const first = yield* admitTask()
      const tasks = [first.task]
      for (let i = 0; i < 4; i++) tasks.push((yield* admitTask({}, first.accountId)).task)
      yield* Effect.forkScoped(TaskWorker.run(fast))
      for (const task of tasks) expect((yield* waitFor(first.accountId, task.id, finished)).status).toBe("succeeded")
      expect(most).toBe(2)
      expect(fake.calls.submit).toHaveLength(5)
    }).pipe(Effect.provide(services([fake.adapter], { "test-image": 2 })))
  })
})

describe("TaskWorker writes", () => {
  it.live("a batch of moves the store refuses for one task's data is written again move by move", () => {
    const fake = fakeProvider({})
    let poisoned: string | undefined
    let mixedBatches = 0
    // storage-memory refusing, as storage-pg does a value it cannot hold, every batch naming `poisoned`.
    const refusing = Layer.effect(
      TaskStore,
      Effect.map(TaskStore, (store) =>
        TaskStore.of({
          ...store,
          transitionAll: (requests) => {
            if (!requests.some((request) => request.taskId === poisoned)) return store.transitionAll(requests)
            if (requests.length > 1) mixedBatches++
            return Effect.die(new StoreRefused({ message: "the database refused the request's data", code: "22P05" }))
          }
        })
      )
    ).pipe(Layer.provideMerge(services([fake.adapter])))
    return Effect.gen(function* () {
      const healthy = yield* admitTask()
      const bad = yield* admitTask({}, healthy.accountId)
      poisoned = bad.task.id
      yield* Effect.forkScoped(TaskWorker.run(fast))
      expect((yield* waitFor(healthy.accountId, healthy.task.id, finished)).status).toBe("succeeded")
      // Both tasks were claimed at once, so their first moves shared a batch.
      expect(mixedBatches).toBeGreaterThan(0)
      expect((yield* read(healthy.accountId, bad.task.id)).status).toBe("queued")
    }).pipe(Effect.provide(refusing))
  })
})
