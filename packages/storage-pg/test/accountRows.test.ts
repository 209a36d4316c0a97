/**
 * AccountRows.ownRows, the store's side of the hashed per-account indexes: a page read by the
 * account id's hash may hold rows of another account sharing it; the account gets exactly its own
 * rows, a full page while there are more, read again with a longer page when others took room.
 */
import { Effect } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { ownRows } from "../src/internal/AccountRows.ts"

/** Rows newest first as an index range would give them, and the page lengths read. */
const ranged = (owners: ReadonlyArray<string>) => {
  const rows = owners.map((account_id, n) => ({ account_id, n }))
  const asked: Array<number> = []
  const read = (limit: number) =>
    Effect.sync(() => {
      asked.push(limit)
      return rows.slice(0, limit)
    })
  return { read, asked }
}

describe("AccountRows.ownRows", () => {
  it.effect("reads one page when no other account shares the hash", () =>
    Effect.gen(function* () {
      const { read, asked } = ranged(Array.from({ length: 30 }, () => "acct_a"))
      const rows = yield* ownRows("acct_a", 10, read)
      expect(rows.map((row) => row.n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
      expect(asked).toEqual([10])
    })
  )

  it.effect("skips another account's rows and reads on until the page is full", () =>
    Effect.gen(function* () {
      // acct_b shares acct_a's hash: its rows are interleaved with acct_a's in the range.
      const owners = Array.from({ length: 40 }, (_, n) => (n % 3 === 0 ? "acct_b" : "acct_a"))
      const { read, asked } = ranged(owners)
      const rows = yield* ownRows("acct_a", 10, read)
      expect(rows).toHaveLength(10)
      expect(rows.every((row) => row.account_id === "acct_a")).toBe(true)
      expect(rows.map((row) => row.n)).toEqual(owners.flatMap((owner, n) => (owner === "acct_a" ? [n] : [])).slice(0, 10))
      expect(asked).toEqual([10, 20])
    })
  )

  it.effect("answers a short page when the range ends, whoever's rows it held", () =>
    Effect.gen(function* () {
      const { read, asked } = ranged(["acct_b", "acct_a", "acct_b", "acct_b", "acct_a"])
      const rows = yield* ownRows("acct_a", 4, read)
      expect(rows.map((row) => row.n)).toEqual([1, 4])
      expect(asked).toEqual([4, 8])
    })
  )
})
