import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const list = (who: T.Customer, query = "") => T.call(`/api/v1/jobs${query}`, { headers: T.bearer(who.secret) })

const idsOf = (body: { readonly data: ReadonlyArray<{ readonly id: string }> }) => body.data.map((task) => task.id)

for (const store of stores) {
  layer(T.layer(store), { excludeTestServices: true })(`GET /api/v1/jobs pages over ${store.name}`, (it) => {
    describe("GET /api/v1/jobs: limit, before, filters", () => {
      it.effect("pages with limit and nextCursor without gaps or repeats while tasks are added", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          for (let i = 0; i < 5; i++) yield* T.submit(who)
          const all = yield* list(who)
          expect(all.body.nextCursor).toBeNull()
          const snapshot = idsOf(all.body)
          const seen: Array<string> = []
          let query = "?limit=2"
          for (;;) {
            const { body } = yield* list(who, query)
            seen.push(...idsOf(body))
            yield* T.submit(who)
            if (body.nextCursor === null) break
            query = `?limit=2&before=${encodeURIComponent(body.nextCursor)}`
          }
          expect(seen).toEqual(snapshot)
          expect(idsOf((yield* list(who)).body)).toHaveLength(8)
        })
      )

      it.effect("filters by status, model and created time", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const { body: first } = yield* T.submit(who)
          const { body: second } = yield* T.submit(who)
          yield* T.call(`/api/v1/jobs/${first.id}/cancel`, { method: "POST", headers: T.bearer(who.secret) })
          expect(idsOf((yield* list(who, "?status=failed")).body)).toEqual([first.id])
          expect(idsOf((yield* list(who, "?status=queued")).body)).toEqual([second.id])
          expect(idsOf((yield* list(who, `?model=${T.MODEL}`)).body)).toEqual([second.id, first.id])
          expect(idsOf((yield* list(who, "?model=song-lyrics")).body)).toEqual([])
          const after = encodeURIComponent(first.createdAt)
          expect(idsOf((yield* list(who, `?createdBefore=${after}`)).body)).toEqual([])
          expect(idsOf((yield* list(who, "?createdAfter=2000-01-01T00:00:00Z&createdBefore=2999-01-01T00:00:00Z")).body)).toEqual(
            [second.id, first.id]
          )
        })
      )

      it.effect("refuses invalid parameters with 400 INVALID_REQUEST naming them", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          for (const [query, name] of [
            ["?limit=0", "limit"],
            ["?limit=101", "limit"],
            ["?limit=ten", "limit"],
            ["?status=done", "status"],
            ["?createdAfter=yesterday", "createdAfter"],
            ["?createdBefore=2030-13-45T00:00:00Z", "createdBefore"]
          ] as const) {
            const reply = yield* list(who, query)
            expect(reply.status, query).toBe(400)
            expect(reply.body.code).toBe("INVALID_REQUEST")
            expect(reply.body.error, query).toContain(name)
          }
        })
      )

      it.effect("answers 404 JOB_NOT_FOUND for a cursor that names no task of the caller", () =>
        Effect.gen(function* () {
          const owner = yield* T.customer()
          const stranger = yield* T.customer()
          const { body: task } = yield* T.submit(owner)
          for (const cursor of [task.id, "task_00000000-0000-4000-8000-000000000000", "not-a-cursor"]) {
            const reply = yield* list(stranger, `?before=${encodeURIComponent(cursor)}`)
            expect(reply.status, cursor).toBe(404)
            expect(reply.body.code).toBe("JOB_NOT_FOUND")
          }
        })
      )
    })
  })
}
