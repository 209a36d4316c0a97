/**
 * Result downloads go through the address policy (`PublicFetch`): the host is resolved (by an
 * injected resolver here), every answer checked, and the connection made to those addresses
 * only; http, redirects and non-public answers are refused, and a body past the cap is cut off.
 * The files are served by a loopback server, reachable only under the tests' loopback policy.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as AddressPolicy from "../../src/outbound/AddressPolicy.ts"
import * as ErrorCode from "../../src/domain/TaskErrorCode.ts"
import type { AccountId, TaskId } from "../../src/domain/Ids.ts"
import * as Outputs from "../../src/tasks/Outputs.ts"
import * as PublicFetch from "../../src/outbound/PublicFetch.ts"
import type { TaskRecord } from "../../src/tasks/TaskStore.ts"
import * as TaskWorker from "../../src/tasks/TaskWorker.ts"
import { expectBalances, USD } from "../../src/testing/Fixtures.ts"
import { admitTask, fakeProvider, fast, services, storedFile, waitFor } from "./TaskWorkerSupport.ts"

const BIG = 64 * 1024

let port = 0
let close = () => Promise.resolve()
const hits: Array<{ readonly host: string | undefined; readonly path: string | undefined }> = []
let bigAborted: Promise<boolean> = Promise.resolve(false)

// On 127.0.0.2 only (Linux routes all of 127/8 to loopback), where what `localhost` resolves
// to on its own (127.0.0.1, ::1) finds nothing: a fetch that reaches it used the vetted address.
beforeAll(async () => {
  const server = createServer((request, response) => {
    hits.push({ host: request.headers.host, path: request.url })
    switch (request.url) {
      case "/a.png":
        return void response.writeHead(200, { "content-type": "image/png" }).end(Buffer.alloc(100, 7))
      case "/moved.png":
        return void response.writeHead(302, { location: `http://localhost:${port}/a.png` }).end()
      case "/big.mp4": {
        // No Content-Length: the cap must count what streams in, and stop reading.
        response.writeHead(200, { "content-type": "video/mp4" })
        bigAborted = new Promise((resolve) => {
          let sent = 0
          const more = () => {
            while (sent < 100 * BIG) {
              sent += BIG
              if (!response.write(Buffer.alloc(BIG))) return void response.once("drain", more)
            }
            response.end()
          }
          response.once("close", () => resolve(!response.writableFinished))
          more()
        })
        return
      }
      default:
        return void response.writeHead(404).end()
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.2", resolve))
  port = (server.address() as AddressInfo).port
  close = () =>
    new Promise((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
})
afterAll(() => close())

const asked: Array<string> = []
const zone = (answers: { readonly [host: string]: string }, allowLoopbackForTests: boolean): AddressPolicy.Policy => ({
  allowLoopbackForTests,
  resolve: async (hostname) => {
    asked.push(hostname)
    const address = answers[hostname]
    if (address === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" })
    return [{ address, family: address.includes(":") ? 6 : 4 }]
  }
})

/** The tests' policy: `localhost` is the test server, loopback allowed. */
const loopback = zone({ localhost: "127.0.0.2" }, true)
/** Production rules, with names an attacker controls pointing inside. */
const strict = zone(
  { "evil.example.com": "127.0.0.2", "private.example.com": "10.0.0.1", "v6.example.com": "::ffff:127.0.0.2" },
  false
)

const fetchUnder = (policy: AddressPolicy.Policy, url: string) =>
  Effect.gen(function* () {
    const response = yield* PublicFetch.get(url)
    return { status: response.status, bytes: (yield* Effect.promise(() => response.arrayBuffer())).byteLength }
  }).pipe(Effect.scoped, Effect.provide(Layer.succeed(AddressPolicy.AddressPolicy, policy)))

const reset = () => {
  hits.length = 0
  asked.length = 0
}

describe("PublicFetch", () => {
  it.effect("connects to the address it vetted, resolving the name once", () =>
    Effect.gen(function* () {
      reset()
      expect(yield* fetchUnder(loopback, `http://localhost:${port}/a.png`)).toEqual({ status: 200, bytes: 100 })
      expect(asked).toEqual(["localhost"])
      expect(hits).toEqual([{ host: `localhost:${port}`, path: "/a.png" }])
    })
  )

  it.effect.each([
    ["evil.example.com", "non-public address (127.0.0.2)"],
    ["private.example.com", "non-public address (10.0.0.1)"],
    ["v6.example.com", "non-public address (::ffff:127.0.0.2)"]
  ])("refuses %s, which resolves inside, and never connects", ([host, reason]) =>
    Effect.gen(function* () {
      reset()
      const error = yield* Effect.flip(fetchUnder(strict, `https://${host}:${port}/a.png`))
      expect(error).toBeInstanceOf(PublicFetch.Refused)
      expect(error.message).toContain(reason)
      expect(asked).toEqual([host])
      expect(hits).toEqual([])
    })
  )

  it.effect("refuses http, credentials and loopback literals without resolving", () =>
    Effect.gen(function* () {
      reset()
      for (const url of [
        `http://cdn.example.com/a.png`,
        `https://u:p@cdn.example.com/a.png`,
        `https://127.0.0.2:${port}/a.png`
      ]) {
        const error = yield* Effect.flip(fetchUnder(strict, url))
        expect(error, url).toBeInstanceOf(PublicFetch.Refused)
      }
      expect(asked).toEqual([])
      expect(hits).toEqual([])
    })
  )

  it.effect("follows no redirect: a 3xx is refused", () =>
    Effect.gen(function* () {
      reset()
      const error = yield* Effect.flip(fetchUnder(loopback, `http://localhost:${port}/moved.png`))
      expect(error).toBeInstanceOf(PublicFetch.Refused)
      expect(error.message).toContain("redirect (HTTP 302)")
      expect(hits.map((hit) => hit.path)).toEqual(["/moved.png"])
    })
  )

  it.effect("has a dispatcher that itself connects nowhere but the vetted addresses", () =>
    Effect.gen(function* () {
      reset()
      const vetted = zone({ "public.example.com": "93.184.215.14", "other.example.com": "127.0.0.2" }, false)
      // A transport that sends the request elsewhere with the same dispatcher.
      const elsewhere =
        (target: string): typeof globalThis.fetch =>
        (_url, init) =>
          globalThis.fetch(target, init)
      for (const target of [`http://127.0.0.2:${port}/a.png`, `http://other.example.com:${port}/a.png`]) {
        const error = yield* Effect.flip(
          PublicFetch.get("https://public.example.com/a.png", { fetch: elsewhere(target) }).pipe(
            Effect.scoped,
            Effect.provide(Layer.succeed(AddressPolicy.AddressPolicy, vetted))
          )
        )
        expect(error, target).toBeInstanceOf(PublicFetch.Refused)
      }
      expect(asked).toEqual(["public.example.com", "public.example.com"])
      expect(hits).toEqual([])
    })
  )

  it.effect("refuses a port other than the allowed ones", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        PublicFetch.get(`https://cdn.example.com:8443/a.png`, { ports: [443] }).pipe(
          Effect.scoped,
          Effect.provide(Layer.succeed(AddressPolicy.AddressPolicy, strict))
        )
      )
      expect(error).toMatchObject({ _tag: "Refused", message: "https://cdn.example.com:8443/a.png is not on port 443" })
    })
  )
})

describe("storing a result", () => {
  const task = { id: "task_00000000-0000-4000-8000-000000000001" as TaskId, accountId: "acct_test" as AccountId }
  const store = (policy: AddressPolicy.Policy, url: string, maxBytes = 1024 * 1024) =>
    Outputs.store(task, [{ type: "video", url, contentType: "video/mp4" }], { maxBytes, timeoutMs: 10_000 }).pipe(
      Effect.provide(Layer.mergeAll(MemoryStore.layer, Layer.succeed(AddressPolicy.AddressPolicy, policy)))
    )

  it.effect("downloads a file from a vetted address", () =>
    Effect.gen(function* () {
      const [asset] = yield* store(loopback, `http://localhost:${port}/a.png`)
      expect(asset).toMatchObject({ type: "video", mimeType: "video/mp4" })
    })
  )

  it.effect("refuses, as DownloadRefused, a host resolving inside, http and a redirect", () =>
    Effect.gen(function* () {
      for (const [policy, url] of [
        [strict, `https://evil.example.com:${port}/a.png`],
        [strict, `https://private.example.com/a.png`],
        [strict, `http://cdn.example.com/a.png`],
        [loopback, `http://localhost:${port}/moved.png`]
      ] as const) {
        const error = yield* Effect.flip(store(policy, url))
        expect(error._tag, url).toBe("DownloadRefused")
      }
    })
  )

  it.effect("stops reading a body past the cap and aborts the download", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(store(loopback, `http://localhost:${port}/big.mp4`, 4 * BIG))
      expect(error._tag).toBe("BlobTooLarge")
      expect(yield* Effect.promise(() => bigAborted)).toBe(true)
    })
  )
})

describe("the worker", () => {
  const finished = (record: TaskRecord) => record.status === "succeeded" || record.status === "failed"

  it.live("fails a task whose result link resolves to a private address, charging nothing", () => {
    const downloads: Array<string> = []
    const fetch: typeof globalThis.fetch = async (url) => {
      downloads.push(String(url))
      return new Response(new Uint8Array(10))
    }
    const fake = fakeProvider({
      poll: [
        { _tag: "Succeeded", outputs: [{ type: "image", url: "https://private.example.com/a.png", contentType: "image/png" }] }
      ]
    })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* Effect.forkScoped(TaskWorker.run({ ...fast, fetch }))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done).toMatchObject({ status: "failed", errorCode: ErrorCode.ResultUrlRefused })
      expect(downloads).toEqual([])
      yield* expectBalances(accountId, { balance: 10 * USD, reserved: 0 })
    }).pipe(Effect.provide(Layer.succeed(AddressPolicy.AddressPolicy, strict)), Effect.provide(services([fake.adapter])))
  })

  it.live("stores a result served from the vetted address", () => {
    const fake = fakeProvider({
      poll: [{ _tag: "Succeeded", outputs: [{ type: "image", url: `http://localhost:${port}/a.png`, contentType: "image/png" }] }]
    })
    return Effect.gen(function* () {
      const { accountId, task } = yield* admitTask()
      yield* Effect.forkScoped(TaskWorker.run(fast))
      const done = yield* waitFor(accountId, task.id, finished)
      expect(done.status).toBe("succeeded")
      expect((yield* storedFile(done.assets[0]!.resultId!))?.length).toBe(100)
    }).pipe(Effect.provide(Layer.succeed(AddressPolicy.AddressPolicy, loopback)), Effect.provide(services([fake.adapter])))
  })
})
