/**
 * Retention over HTTP, on each store: a task shows its files' expiresAt; past it (a file stored
 * more than RESULT_RETENTION ago) the task shows dataRemoved without asset urls, a download is
 * 410 RESULT_EXPIRED, and a housekeeping pass removes the bytes.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { BlobStore, Housekeeping, Retention } from "@taskmeter/kernel"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const DAY_MS = 24 * 60 * 60 * 1000

const getTask = (who: T.Customer, id: string) => T.call(`/api/v1/jobs/${id}`, { headers: T.bearer(who.secret) })

for (const store of stores) {
  layer(T.layer(store), { excludeTestServices: true })(`retention over ${store.name}`, (it) => {
    describe("result retention", () => {
      it.effect("shows expiresAt, the stored expiry, and serves the file before it", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const { body: task } = yield* T.submit(who)
          const storedAt = new Date()
          const { expiresAt } = yield* T.succeedWithResult(who, task.id, T.PNG, "image/png", storedAt)
          expect(expiresAt).toEqual(Retention.expiresAt(storedAt, Retention.DEFAULT_DAYS))
          const { body: shown } = yield* getTask(who, task.id)
          expect(shown.expiresAt).toBe(expiresAt.toISOString())
          expect(shown.dataRemoved).toBeUndefined()
          const url = T.assetUrls(shown)[0]!
          expect((yield* T.call(url, { headers: T.bearer(who.secret) })).status).toBe(200)
          // The list shows it alike.
          const { body: list } = yield* T.call("/api/v1/jobs", { headers: T.bearer(who.secret) })
          expect(list.data.find((item: { id: string }) => item.id === task.id)?.expiresAt).toBe(expiresAt.toISOString())
        })
      )

      it.effect("past it: dataRemoved without urls, downloads 410 RESULT_EXPIRED, housekeeping removes the bytes", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const { body: task } = yield* T.submit(who)
          const storedAt = new Date(Date.now() - Retention.DEFAULT_DAYS * DAY_MS - 1000)
          const { resultId } = yield* T.succeedWithResult(who, task.id, T.PNG, "image/png", storedAt)
          const { body: shown } = yield* getTask(who, task.id)
          expect(shown.dataRemoved).toBe(true)
          expect(shown.expiresAt).toBeUndefined()
          expect(shown.assets).toHaveLength(1)
          expect(T.assetUrls(shown)).toEqual([])

          const refused = yield* T.call(`/api/v1/results/${resultId}`, { headers: T.bearer(who.secret) })
          expect(refused.status).toBe(410)
          expect(refused.body.code).toBe("RESULT_EXPIRED")
          expect(refused.body.error).toContain("expired")

          const key = `results/${resultId}`
          expect(yield* BlobStore.BlobStore.use((blobs) => blobs.size(key))).toBe(T.PNG.byteLength)
          const pass = yield* Housekeeping.removeExpiredFiles()
          expect(pass.results.removed).toBeGreaterThanOrEqual(1)
          expect(yield* BlobStore.BlobStore.use((blobs) => blobs.size(key))).toBeUndefined()
          expect((yield* getTask(who, task.id)).body.dataRemoved).toBe(true)
          expect((yield* T.call(`/api/v1/results/${resultId}`, { headers: T.bearer(who.secret) })).status).toBe(410)
        })
      )
    })
  })
}
