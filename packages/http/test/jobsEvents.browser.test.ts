/**
 * GET /api/v1/jobs/{id}/events read by a browser's own EventSource (headless Chromium through
 * playwright-core), from a page of the server's origin. A page's EventSource cannot set headers:
 * the key is added to the page's requests by the browser context, as a same-origin proxy or
 * session would supply the credential.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { TaskStore } from "@taskmeter/kernel"
import * as Chromium from "../../../test/Chromium.ts"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const memory = stores[0]!

/** A page of `origin` in a fresh headless Chromium, closed with the scope. */
const browserPage = (origin: string, headers: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const { context, close } = await Chromium.launch()
      const page = await context.newPage()
      await page.setExtraHTTPHeaders(headers)
      await page.goto(`${origin}/healthz`)
      return { page, close }
    }),
    ({ close }) => Effect.promise(close)
  )

interface Seen {
  readonly type: string
  readonly id: string
  readonly status: string
}

const seenIn = (page: Page) => Effect.promise(() => page.evaluate(() => (globalThis as any).seen as Array<Seen>))

const until = (page: Page, count: number) =>
  Effect.promise(() => page.waitForFunction((n) => (globalThis as any).seen.length >= n, count, { timeout: 10_000 }))

layer(T.layer(memory), { excludeTestServices: true })("GET /api/v1/jobs/{id}/events in Chromium", (it) => {
  it.effect("a page's EventSource gets each status, then the task, and stops at the 204 after it", () =>
    Effect.gen(function* () {
      const who = yield* T.customer()
      const { body: task } = yield* T.submit(who)
      const { page } = yield* browserPage(yield* T.baseUrl, T.bearer(who.secret))
      yield* Effect.promise(() =>
        page.evaluate((path) => {
          const w = globalThis as any
          w.seen = []
          w.source = new EventSource(path)
          for (const type of ["status", "task"]) {
            w.source.addEventListener(type, (event: MessageEvent) =>
              w.seen.push({ type, id: event.lastEventId, status: JSON.parse(event.data).status })
            )
          }
        }, `/api/v1/jobs/${task.id}/events`)
      )
      yield* until(page, 1)
      const tasks = yield* TaskStore.TaskStore
      const [claim] = yield* tasks.claim({ workerId: "test-worker", limit: 1, leaseMs: 60_000, now: new Date() })
      const step = { taskId: task.id, leaseToken: claim?.leaseToken ?? "", now: new Date(), keepLease: true }
      yield* tasks.transition({ ...step, from: "queued", to: "submitting" })
      yield* until(page, 2)
      yield* tasks.transition({ ...step, from: "submitting", to: "failed", errorCode: "UPSTREAM_FAILED" })
      yield* until(page, 3)
      expect(yield* seenIn(page)).toEqual([
        { type: "status", id: "1", status: "queued" },
        { type: "status", id: "2", status: "submitting" },
        { type: "task", id: "5", status: "failed" }
      ])
      // It reconnects with Last-Event-ID 5, is answered 204, and closes for good.
      yield* Effect.promise(() =>
        page.waitForFunction(() => (globalThis as any).source.readyState === EventSource.CLOSED, undefined, { timeout: 10_000 })
      )
      expect(yield* seenIn(page)).toHaveLength(3)
    })
  )
})
