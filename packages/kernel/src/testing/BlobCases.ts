import { Effect } from "effect"
import { describe, expect } from "@effect/vitest"
import { createHash } from "node:crypto"
import { BlobStore, BlobTooLarge } from "../media/BlobStore.ts"
import type { Case } from "./Case.ts"
import { defined } from "./Fixtures.ts"

async function* chunks(...parts: ReadonlyArray<string>): AsyncIterable<Uint8Array> {
  for (const part of parts) yield new TextEncoder().encode(part)
}

const text = (body: AsyncIterable<Uint8Array>) =>
  Effect.promise(async () => {
    const parts: Array<Uint8Array> = []
    for await (const chunk of body) parts.push(chunk)
    return Buffer.concat(parts).toString("utf8")
  })

export const blobCases = (test: Case) =>
  describe("BlobStore", () => {
    test(
      "stores, sizes, reads and removes bytes",
      Effect.gen(function* () {
        const store = yield* BlobStore
        const written = yield* store.put("media/one", chunks("hello ", "world"), { maxBytes: 100 })
        expect(written).toEqual({ sizeBytes: 11, sha256: createHash("sha256").update("hello world").digest("hex") })
        expect(yield* store.size("media/one")).toBe(11)
        expect(yield* text(defined(yield* store.read("media/one")))).toBe("hello world")
        expect(yield* text(defined(yield* store.read("media/one", { start: 6, end: 10 })))).toBe("world")
        expect(yield* text(defined(yield* store.read("media/one", { start: 0, end: 0 })))).toBe("h")

        yield* store.put("media/one", chunks("replaced"), { maxBytes: 100 })
        expect(yield* text(defined(yield* store.read("media/one")))).toBe("replaced")

        yield* store.remove("media/one")
        expect(yield* store.size("media/one")).toBeUndefined()
        expect(yield* store.read("media/one")).toBeUndefined()
        yield* store.remove("media/one")
      })
    )

    test(
      "refuses a body past maxBytes and keeps nothing",
      Effect.gen(function* () {
        const store = yield* BlobStore
        const error = yield* Effect.flip(store.put("media/big", chunks("12345", "67890", "x"), { maxBytes: 10 }))
        expect(error).toBeInstanceOf(BlobTooLarge)
        expect(yield* store.size("media/big")).toBeUndefined()
        expect((yield* store.put("media/exact", chunks("12345", "67890"), { maxBytes: 10 })).sizeBytes).toBe(10)
      })
    )

    test(
      "removes many keys at once, unknown ones included",
      Effect.gen(function* () {
        const store = yield* BlobStore
        const keys = ["results/a", "results/b", "results/c"]
        for (const key of keys) yield* store.put(key, chunks(key), { maxBytes: 100 })
        yield* store.removeMany(["results/a", "results/c", "results/unknown"])
        expect(yield* store.size("results/a")).toBeUndefined()
        expect(yield* store.size("results/c")).toBeUndefined()
        expect(yield* text(defined(yield* store.read("results/b")))).toBe("results/b")
        yield* store.removeMany([])
      })
    )

    test(
      "unknown keys have no size and no bytes",
      Effect.gen(function* () {
        const store = yield* BlobStore
        expect(yield* store.size("results/none")).toBeUndefined()
        expect(yield* store.read("results/none")).toBeUndefined()
      })
    )
  })
