import { Effect } from "effect"
import { describe, expect } from "@effect/vitest"
import { TaskStore } from "../tasks/TaskStore.ts"
import type { TaskListFilter, TaskRecord } from "../tasks/TaskStore.ts"
import type { TaskStatus } from "../domain/TaskStatus.ts"
import type { AccountId } from "../domain/Ids.ts"
import type { Case } from "./Case.ts"
import { admission, admitted, at, claimTask, fundedAccount, newTask, price, USD } from "./Fixtures.ts"

/** Every page of `limit` under `filter`, following the last id of each page as `before`. */
const allPages = (
  accountId: AccountId,
  limit: number,
  filter: TaskListFilter,
  between: Effect.Effect<void, unknown, TaskStore>
) =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    const pages: Array<ReadonlyArray<string>> = []
    let before: TaskRecord["id"] | undefined
    for (;;) {
      const page = yield* store.list(accountId, limit, { ...filter, before })
      if (page.length === 0) return pages
      pages.push(page.map((task) => task.id))
      before = page.at(-1)?.id
      yield* between
    }
  })

export const listCases = (test: Case) => {
  describe("TaskStore list pages and filters", () => {
    test(
      "cursor pages have no gaps or repeats while tasks are being added, ties in createdAt included",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const mine = yield* fundedAccount(1_000 * USD)
        const theirs = yield* fundedAccount(10 * USD, "theirs")
        // Pairs of tasks share a createdAt: admission order breaks the tie.
        for (let i = 0; i < 10; i++) yield* admitted(admission(newTask(mine, { createdAt: at(Math.floor(i / 2)) })))
        yield* admitted(admission(newTask(theirs, { createdAt: at(3) })))
        const snapshot = (yield* store.list(mine, 100)).map((task) => task.id)
        expect(snapshot).toHaveLength(10)
        let added = 0
        const addTwo = Effect.gen(function* () {
          yield* admitted(admission(newTask(mine, { createdAt: at(100 + added) })))
          yield* admitted(admission(newTask(mine, { createdAt: at(4) })))
          added++
        })
        const pages = yield* allPages(mine, 3, {}, addTwo)
        expect(pages.map((page) => page.length)).toEqual([3, 3, 3, 1])
        expect(pages.flat()).toEqual(snapshot)
        expect((yield* store.list(mine, 100)).length).toBe(10 + 2 * added)
      })
    )

    test(
      "filters by status, model and created time, and pages within a filter",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const mine = yield* fundedAccount(100 * USD)
        const theirs = yield* fundedAccount(10 * USD, "theirs")
        const tasks: Array<TaskRecord> = []
        for (let i = 0; i < 8; i++) {
          tasks.push(yield* admitted(admission(newTask(mine, { createdAt: at(i), model: i % 2 === 0 ? "even" : "odd" }))))
        }
        const foreign = yield* admitted(admission(newTask(theirs, { createdAt: at(5), model: "even" })))
        for (const task of tasks.slice(0, 3)) expect((yield* store.cancel(mine, task.id, at(20)))?._tag).toBe("Canceled")
        // The oldest queued task succeeds.
        const { leaseToken } = yield* claimTask(tasks[3]!.id, at(21))
        const moves = [
          { from: "queued", to: "submitting", keepLease: true },
          { from: "submitting", to: "running", keepLease: true, upstreamRef: "upstream-1" },
          { from: "running", to: "succeeded", keepLease: false, chargeMicros: price(USD) }
        ] as const
        for (const move of moves) {
          expect((yield* store.transition({ taskId: tasks[3]!.id, leaseToken, now: at(22), ...move }))._tag).toBe("Done")
        }
        const ids = (filter: TaskListFilter, limit = 100) =>
          Effect.map(store.list(mine, limit, filter), (page) => page.map((task) => task.id))
        const newestFirst = (picked: ReadonlyArray<TaskRecord>) => picked.map((task) => task.id).reverse()

        expect(yield* ids({ status: "failed" })).toEqual(newestFirst(tasks.slice(0, 3)))
        expect(yield* ids({ status: "queued" })).toEqual(newestFirst(tasks.slice(4)))
        expect(yield* ids({ status: "succeeded" })).toEqual([tasks[3]!.id])
        expect(yield* ids({ status: "succeeded", model: "odd" })).toEqual([tasks[3]!.id])
        expect(yield* ids({ status: "succeeded", model: "even" })).toEqual([])
        expect(yield* ids({ status: "running" })).toEqual([])
        expect(yield* ids({ model: "even" })).toEqual(newestFirst(tasks.filter((_, i) => i % 2 === 0)))
        expect(yield* ids({ model: "even", status: "queued" })).toEqual(newestFirst([tasks[4]!, tasks[6]!]))
        expect(yield* ids({ createdAfter: at(2), createdBefore: at(5) })).toEqual(newestFirst(tasks.slice(3, 5)))
        expect(yield* ids({ status: "queued", createdAfter: at(2), createdBefore: at(5) })).toEqual([tasks[4]!.id])
        expect(yield* ids({ createdAfter: at(7) })).toEqual([])
        const pages = yield* allPages(mine, 2, { model: "odd" }, Effect.void)
        expect(pages.flat()).toEqual(newestFirst(tasks.filter((_, i) => i % 2 === 1)))
        // A cursor of another account's task lists nothing.
        expect(yield* ids({ before: foreign.id })).toEqual([])
      })
    )

    test(
      "lists each status on its own, newest first, paged by before= without gaps or repeats",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const statuses: ReadonlyArray<TaskStatus> = [
          "queued",
          "submitting",
          "running",
          "succeeded",
          "failed",
          "reconciliation_required"
        ]
        // The path from queued to each status, every step keeping the lease but the last into a settled status.
        const paths: { readonly [S in TaskStatus]: ReadonlyArray<readonly [TaskStatus, TaskStatus]> } = {
          queued: [],
          submitting: [["queued", "submitting"]],
          running: [
            ["queued", "submitting"],
            ["submitting", "running"]
          ],
          succeeded: [
            ["queued", "submitting"],
            ["submitting", "running"],
            ["running", "succeeded"]
          ],
          failed: [["queued", "failed"]],
          reconciliation_required: [
            ["queued", "submitting"],
            ["submitting", "reconciliation_required"]
          ]
        }
        const mine = yield* fundedAccount(1_000 * USD)
        const theirs = yield* fundedAccount(1_000 * USD, "theirs")
        // Three tasks of mine and one of theirs in each status, their times interleaved across statuses.
        const placed: Array<{ readonly task: TaskRecord; readonly status: TaskStatus }> = []
        for (let round = 0; round < 4; round++) {
          for (const [i, status] of statuses.entries()) {
            const owner = round === 3 ? theirs : mine
            const task = yield* admitted(admission(newTask(owner, { createdAt: at(round * 10 + i) })))
            placed.push({ task, status })
          }
        }
        const claims = yield* store.claim({ workerId: "worker-a", limit: 1000, leaseMs: 60_000, now: at(100) })
        for (const { task, status } of placed) {
          const claim = claims.find((c) => c.task.id === task.id)
          expect(claim).toBeDefined()
          for (const [from, to] of paths[status]) {
            const settles = to === "succeeded" || to === "failed"
            const result = yield* store.transition({
              taskId: task.id,
              leaseToken: claim!.leaseToken,
              from,
              to,
              now: at(101),
              keepLease: !settles,
              ...(to === "running" ? { upstreamRef: `upstream-${task.id}` } : {}),
              ...(to === "succeeded" ? { chargeMicros: price(USD) } : {}),
              ...(to === "failed" ? { errorCode: "DEADLINE_EXCEEDED" } : {}),
              ...(to === "reconciliation_required" ? { errorCode: "OUTCOME_UNKNOWN" } : {})
            })
            expect(result._tag).toBe("Done")
          }
        }
        for (const status of statuses) {
          const expected = placed
            .filter((entry) => entry.status === status && entry.task.accountId === mine)
            .map((entry) => entry.task.id)
            .reverse()
          const pages = yield* allPages(mine, 2, { status }, Effect.void)
          expect([status, pages.map((page) => page.length), pages.flat()]).toEqual([status, [2, 1], expected])
          const listed = yield* store.list(mine, 100, { status })
          expect(listed.every((task) => task.status === status)).toBe(true)
        }
      })
    )
  })
}
