import { createHash } from "node:crypto"
import { Effect } from "effect"
import { BlobStore } from "@taskmeter/kernel"
import { StoreError } from "@taskmeter/kernel"
import type { State } from "./State.ts"

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes
}

export const make = (state: State): BlobStore.BlobStore["Service"] =>
  BlobStore.BlobStore.of({
    put: (key, body, { maxBytes }) =>
      Effect.tryPromise({
        try: async () => {
          const parts: Array<Uint8Array> = []
          let size = 0
          for await (const chunk of body) {
            size += chunk.byteLength
            if (size > maxBytes) throw new BlobStore.BlobTooLarge({ maxBytes })
            parts.push(chunk)
          }
          return Buffer.concat(parts)
        },
        catch: (cause) =>
          cause instanceof BlobStore.BlobTooLarge
            ? cause
            : new StoreError.StoreUnavailable({ message: "Blob store could not read the body", cause })
      }).pipe(
        Effect.map((bytes) => {
          state.blobs.set(key, bytes)
          return { sizeBytes: bytes.byteLength, sha256: createHash("sha256").update(bytes).digest("hex") }
        })
      ),
    size: (key) => Effect.sync(() => state.blobs.get(key)?.byteLength),
    read: (key, range) =>
      Effect.sync(() => {
        const bytes = state.blobs.get(key)
        if (bytes === undefined) return undefined
        return once(range === undefined ? bytes : bytes.subarray(range.start, range.end + 1))
      }),
    remove: (key) => Effect.sync(() => void state.blobs.delete(key)),
    removeMany: (keys) =>
      Effect.sync(() => {
        for (const key of keys) state.blobs.delete(key)
      })
  })
