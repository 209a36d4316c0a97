/**
 * Test doubles and helpers for the TaskWorker and Reconciler tests: a scriptable fake
 * ProviderV1 that records its calls, the worker's services over storage-memory, and waits on
 * real (short) time.
 */
import { Effect, Layer, Redacted } from "effect"
import { expect } from "@effect/vitest"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as AddressPolicy from "../../src/outbound/AddressPolicy.ts"
import { BlobStore } from "../../src/media/BlobStore.ts"
import * as Catalog from "../../src/catalog/Catalog.ts"
import * as Executors from "../../src/tasks/Executors.ts"
import type { AccountId, ResultId, TaskId } from "../../src/domain/Ids.ts"
import * as MediaUrls from "../../src/media/MediaUrls.ts"
import * as Outputs from "../../src/tasks/Outputs.ts"
import { ProviderError } from "../../src/tasks/Provider.ts"
import type { PollResult, ProviderOutput, ProviderV1, SubmitRequest, SubmitResult } from "../../src/tasks/Provider.ts"
import type * as TaskWorker from "../../src/tasks/TaskWorker.ts"
import { TaskStore } from "../../src/tasks/TaskStore.ts"
import type { NewTask, TaskRecord } from "../../src/tasks/TaskStore.ts"
import { admission, admitted, fundedAccount, newTask, USD } from "../../src/testing/Fixtures.ts"

export const MODEL = "test-image"

export const SECRET = Redacted.make("a-test-secret-that-is-long-enough-0123")

/** What a scripted call answers: a result, or a ProviderError to fail with. */
export type Answer<A> = A | ProviderError | ((call: number) => Effect.Effect<A, ProviderError>)

/** Answers calls in order; the last answer repeats. */
const scripted =
  <A>(answers: ReadonlyArray<Answer<A>>) =>
  (call: number): Effect.Effect<A, ProviderError> => {
    if (answers.length === 0) return Effect.die(new Error("fake provider: no scripted answer"))
    const answer = answers[Math.min(call, answers.length - 1)] as Answer<A>
    if (answer instanceof ProviderError) return Effect.fail(answer)
    if (typeof answer === "function") return (answer as (call: number) => Effect.Effect<A, ProviderError>)(call)
    return Effect.succeed(answer)
  }

export interface FakeScript {
  readonly models?: ReadonlyArray<string>
  readonly submit?: ReadonlyArray<Answer<SubmitResult>>
  readonly poll?: ReadonlyArray<Answer<PollResult>>
  /** Present: the adapter implements lookup with these answers. */
  readonly lookup?: ReadonlyArray<Answer<{ readonly upstreamId: string } | undefined>>
  readonly cancel?: boolean
  readonly maxConcurrency?: number
}

export interface FakeCalls {
  readonly submit: Array<SubmitRequest>
  readonly poll: Array<{ readonly upstreamId: string; readonly reference: string }>
  readonly lookup: Array<{ readonly reference: string }>
  readonly cancel: Array<{ readonly upstreamId: string }>
}

export const fakeProvider = (script: FakeScript): { readonly adapter: ProviderV1; readonly calls: FakeCalls } => {
  const calls: FakeCalls = { submit: [], poll: [], lookup: [], cancel: [] }
  const submit = scripted(script.submit ?? [{ _tag: "Accepted", upstreamId: "up-1" }])
  const poll = scripted(script.poll ?? [{ _tag: "Succeeded", outputs: [png()] }])
  const lookup = script.lookup === undefined ? undefined : scripted(script.lookup)
  const adapter: ProviderV1 = {
    specificationVersion: "v1",
    provider: "fake",
    models: script.models ?? [MODEL],
    maxConcurrency: script.maxConcurrency,
    submit: (request) => Effect.suspend(() => submit(calls.submit.push(request) - 1)),
    poll: (request) => Effect.suspend(() => poll(calls.poll.push(request) - 1)),
    lookup: lookup === undefined ? undefined : (request) => Effect.suspend(() => lookup(calls.lookup.push(request) - 1)),
    cancel: script.cancel === true ? (request) => Effect.sync(() => void calls.cancel.push(request)) : undefined
  }
  return { adapter, calls }
}

export const upstreamError = (
  reason: ProviderError["reason"],
  extra: { readonly errorCode?: string; readonly retryAfterMs?: number; readonly status?: number } = {}
) => new ProviderError({ reason, message: `upstream ${reason}`, ...extra })

/** A small "image" result delivered as bytes. */
export const png = (seed = 1): ProviderOutput => ({
  type: "image",
  bytes: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, seed]),
  contentType: "image/png",
  metadata: { width: 1, height: 1 }
})

/** Worker timings short enough for tests on real time. */
export const fast: TaskWorker.Options = {
  leaseMs: 600,
  pollInitialMs: 5,
  pollMaxMs: 20,
  retryInitialMs: 5,
  retryMaxMs: 20,
  idleWaitMs: 20
}

/**
 * Test DNS for result links: hosts under `.upstream.test` resolve to one public address (the
 * downloads themselves go to an injected `fetch`), anything else does not resolve.
 */
export const upstreamDns: AddressPolicy.Policy = {
  allowLoopbackForTests: false,
  resolve: async (hostname) => {
    if (hostname.endsWith(".upstream.test")) return [{ address: "93.184.215.14", family: 4 }]
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" })
  }
}

/** Every service the worker needs, over a fresh memory store. */
export const services = (adapters: ReadonlyArray<ProviderV1>, modelConcurrency?: { readonly [model: string]: number }) =>
  Layer.mergeAll(
    MemoryStore.layer,
    Catalog.layer,
    Executors.layer({ adapters, modelConcurrency }),
    MediaUrls.layer({ baseUrl: "https://api.test", secret: SECRET }),
    Layer.succeed(AddressPolicy.AddressPolicy, upstreamDns)
  )

/** An account with 10 USD and one admitted task on it, deadline an hour away unless given. */
export const admitTask = (overrides: Partial<NewTask> = {}, accountId?: AccountId) =>
  Effect.gen(function* () {
    const account = accountId ?? (yield* fundedAccount(10 * USD))
    const createdAt = new Date()
    const task = yield* admitted(
      admission(
        newTask(account, {
          model: MODEL,
          createdAt,
          deadlineAt: new Date(createdAt.getTime() + 3_600_000),
          ...overrides
        })
      )
    )
    return { accountId: account, task }
  })

export const read = (accountId: AccountId, taskId: TaskId) =>
  TaskStore.use((store) => store.get(accountId, taskId)).pipe(
    Effect.map((task): TaskRecord => {
      expect(task).toBeDefined()
      return task as TaskRecord
    })
  )

/** Waits (on real time) until the task satisfies `done`, failing the test after `timeoutMs`. */
export const waitFor = (accountId: AccountId, taskId: TaskId, done: (task: TaskRecord) => boolean, timeoutMs = 5_000) =>
  Effect.gen(function* () {
    const until = Date.now() + timeoutMs
    for (;;) {
      const task = yield* read(accountId, taskId)
      if (done(task)) return task
      if (Date.now() > until) {
        return yield* Effect.die(new Error(`task ${taskId} stayed ${task.status} (${task.errorCode ?? "no errorCode"})`))
      }
      yield* Effect.sleep(5)
    }
  })

export const waitForStatus = (accountId: AccountId, taskId: TaskId, status: TaskRecord["status"], timeoutMs?: number) =>
  waitFor(accountId, taskId, (task) => task.status === status, timeoutMs)

/** The bytes of a result's file, or undefined when there is none. */
export const storedFile = (id: ResultId) =>
  Effect.gen(function* () {
    const body = yield* BlobStore.use((blobs) => blobs.read(Outputs.blobKeyOf(id)))
    if (body === undefined) return undefined
    return yield* Effect.promise(async () => {
      const chunks: Array<Uint8Array> = []
      for await (const chunk of body) chunks.push(chunk)
      return [...Buffer.concat(chunks)]
    })
  })
