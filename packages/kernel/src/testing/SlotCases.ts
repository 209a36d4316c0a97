/** TaskStore.takeSlots/releaseSlots: upstream limits that every process sharing the store obeys. */
import { Effect } from "effect"
import { describe, expect } from "@effect/vitest"
import { TaskStore } from "../tasks/TaskStore.ts"
import type { Claim, SlotLane } from "../tasks/TaskStore.ts"
import type { Case } from "./Case.ts"
import { admission, admitted, at, fundedAccount, newTask, USD } from "./Fixtures.ts"

const LEASE_MS = 60_000

/**
 * Rounds of the concurrent-takes case: on PostgreSQL before migration 43, about one round in ten
 * let a fourth taker into a lane of three.
 */
const CONCURRENT_ROUNDS = 30

/** `count` admitted tasks, all claimed at `at(1)` with a one-minute lease, oldest first. */
const claimed = (count: number, model = "conformance-image") =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    const accountId = yield* fundedAccount(100 * USD)
    for (let i = 0; i < count; i++) yield* admitted(admission(newTask(accountId, { model, createdAt: at(i * 0.001) })))
    const claims = yield* store.claim({ workerId: "w", limit: count, leaseMs: LEASE_MS, now: at(1) })
    expect(claims).toHaveLength(count)
    return claims
  })

const take = (claim: Claim, lanes: ReadonlyArray<SlotLane>, seconds = 2) =>
  TaskStore.use((store) => store.takeSlots({ taskId: claim.task.id, leaseToken: claim.leaseToken, lanes, now: at(seconds) }))

const release = (claim: Claim, lanes: ReadonlyArray<SlotLane>) =>
  TaskStore.use((store) =>
    store.releaseSlots({ taskId: claim.task.id, leaseToken: claim.leaseToken, lanes: lanes.map((l) => l.lane) })
  )

export const slotCases = (test: Case) => {
  describe("TaskStore upstream slots", () => {
    test(
      "at most `limit` leases hold a lane's slot; a release frees one; taking again keeps the slot held",
      Effect.gen(function* () {
        const lanes = [{ lane: "provider:alpha", limit: 2 }]
        const [a, b, c] = yield* claimed(3)
        expect(yield* take(a!, lanes)).toBe(true)
        expect(yield* take(b!, lanes)).toBe(true)
        expect(yield* take(c!, lanes)).toBe(false)
        expect(yield* take(a!, lanes)).toBe(true)
        expect(yield* take(c!, lanes)).toBe(false)
        yield* release(a!, lanes)
        yield* release(a!, lanes)
        expect(yield* take(c!, lanes)).toBe(true)
        expect(yield* take(a!, lanes)).toBe(false)
        // A raised limit makes room at once; lanes are independent.
        expect(yield* take(a!, [{ lane: "provider:alpha", limit: 3 }])).toBe(true)
        expect(yield* take(a!, [{ lane: "provider:beta", limit: 1 }])).toBe(true)
      })
    )

    test(
      "one slot of every lane or none: a full model lane takes nothing of its provider's",
      Effect.gen(function* () {
        const provider = { lane: "provider:alpha", limit: 2 }
        const model = { lane: "model:conformance-image", limit: 1 }
        const [a, b, c] = yield* claimed(3)
        expect(yield* take(a!, [model, provider])).toBe(true)
        expect(yield* take(b!, [model, provider])).toBe(false)
        expect(yield* take(c!, [provider])).toBe(true)
        expect(yield* take(b!, [provider])).toBe(false)
      })
    )

    test(
      "slots lapse with the lease: expired, given up, or ended by a final move",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const lanes = [{ lane: "provider:alpha", limit: 1 }]
        const [a, b, c] = yield* claimed(3)
        expect(yield* take(a!, lanes)).toBe(true)
        expect(yield* take(b!, lanes)).toBe(false)
        // Past a's lease (and b's, which took at 2 s): a lapsed lease neither holds nor takes.
        expect(yield* take(b!, lanes, 1 + LEASE_MS / 1000)).toBe(false)
        expect(yield* store.renew(b!.task.id, b!.leaseToken, at(600))).toBe(true)
        expect(yield* take(b!, lanes, 1 + LEASE_MS / 1000)).toBe(true)

        // Given up: a lease renewed to the past frees its slot.
        expect(yield* store.renew(b!.task.id, b!.leaseToken, new Date(0))).toBe(true)
        expect(yield* take(c!, lanes)).toBe(true)

        // A final move ends the lease, and its slot with it.
        const moved = yield* store.transition({
          taskId: c!.task.id,
          leaseToken: c!.leaseToken,
          from: "queued",
          to: "failed",
          errorCode: "EXECUTION_UNAVAILABLE",
          now: at(3),
          keepLease: false
        })
        expect(moved._tag).toBe("Done")
        const [d] = yield* claimed(1)
        expect(yield* take(d!, lanes, 3)).toBe(true)
      })
    )

    test(
      "concurrent takes never exceed the limit",
      Effect.gen(function* () {
        // Rounds on lanes of their own, each made by its first takers: a race of the store's shows in a few.
        for (let round = 0; round < CONCURRENT_ROUNDS; round++) {
          const lanes = [
            { lane: `model:conformance-image-${round}`, limit: 3 },
            { lane: `provider:alpha-${round}`, limit: 4 }
          ]
          const claims = yield* claimed(12)
          const taken = yield* Effect.forEach(claims, (claim) => take(claim, lanes), { concurrency: "unbounded" })
          const winners = taken.filter(Boolean).length
          expect(winners).toBeGreaterThanOrEqual(1)
          expect(winners).toBeLessThanOrEqual(3)
          // A taker may have lost a race for a slot another was deciding on; one by one, the lane fills to its limit.
          let held = winners
          for (const [i, claim] of claims.entries()) if (!taken[i] && (yield* take(claim, lanes))) held++
          expect(held).toBe(3)
        }
      })
    )

    test(
      "a task's provider is recorded by the move that sends it",
      Effect.gen(function* () {
        const store = yield* TaskStore
        const [a] = yield* claimed(1)
        expect(a!.task.provider).toBeNull()
        const moved = yield* store.transition({
          taskId: a!.task.id,
          leaseToken: a!.leaseToken,
          from: "queued",
          to: "submitting",
          provider: "simulated",
          now: at(2),
          keepLease: true
        })
        expect(moved._tag === "Done" && moved.task.provider).toBe("simulated")
        expect((yield* store.get(a!.task.accountId, a!.task.id))?.provider).toBe("simulated")
      })
    )
  })
}
