import { execFile } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { BlobStore } from "@taskmeter/kernel"
import { S3BlobStore, S3Client } from "@taskmeter/storage-s3"
import { LocalS3 } from "@taskmeter/storage-s3/testing"
import { Effect } from "effect"
import { vi } from "vitest"
import * as Dependencies from "../../../test/Dependencies.ts"

// Each case runs the CLI (a Node process loading the AWS SDK) two or three times.
vi.setConfig({ testTimeout: 120_000 })

const BIN = fileURLToPath(new URL("../bin/taskmeter.ts", import.meta.url))

let s3: LocalS3.LocalS3
beforeAll(async () => {
  s3 = await LocalS3.start({ prefix: "copied" })
})
afterAll(() => s3.close())

const blobsCopy = (dataDir: string, env: Record<string, string>) =>
  Effect.callback<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resume) => {
    execFile(
      process.execPath,
      [BIN, "admin", "blobs", "copy", "--to", "s3", "--json", "--data-dir", dataDir],
      { env: { ...Dependencies.childEnv, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resume(Effect.succeed({ code: error === null ? 0 : Number(error.code), stdout, stderr }))
    )
  })

async function* bytes(text: string): AsyncIterable<Uint8Array> {
  yield new TextEncoder().encode(text)
}

const text = (body: AsyncIterable<Uint8Array> | undefined) =>
  Effect.promise(async () => {
    const parts: Array<Uint8Array> = []
    for await (const chunk of body ?? []) parts.push(chunk)
    return Buffer.concat(parts).toString("utf8")
  })

describe("taskmeter admin blobs copy --to s3", () => {
  it.live("copies DATA_DIR/blobs into the bucket, skips what is there on a second run, and picks up new files", () =>
    Effect.gen(function* () {
      const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-copy-"))
      const files = BlobStore.makeFileSystem(join(dataDir, "blobs"))
      yield* files.put("media/acct_1/one", bytes("first file"), { maxBytes: 100 })
      yield* files.put("results/two", bytes("second"), { maxBytes: 100 })
      // An interrupted write of the file store: not a blob.
      yield* Effect.promise(() => writeFile(join(dataDir, "blobs", "results", "two.1234.partial"), "half"))

      const first = yield* blobsCopy(dataDir, s3.env)
      expect(first.code, first.stderr).toBe(0)
      expect(JSON.parse(first.stdout)).toEqual({ files: 2, copied: 2, skipped: 0, failed: [], bytesCopied: 16 })
      const bucket = S3BlobStore.make({
        client: S3Client.make(s3.settings, { credentials: LocalS3.credentials }),
        bucket: s3.bucket,
        prefix: "copied/"
      })
      expect(yield* text(yield* bucket.read("media/acct_1/one"))).toBe("first file")
      expect(yield* text(yield* bucket.read("results/two"))).toBe("second")

      const again = yield* blobsCopy(dataDir, s3.env)
      expect(JSON.parse(again.stdout)).toMatchObject({ files: 2, copied: 0, skipped: 2 })

      yield* files.put("results/three", bytes("third"), { maxBytes: 100 })
      const resumed = yield* blobsCopy(dataDir, s3.env)
      expect(JSON.parse(resumed.stdout)).toMatchObject({ files: 3, copied: 1, skipped: 2, bytesCopied: 5 })
      expect(yield* Effect.promise(() => s3.objectKeys("copied/"))).toEqual([
        "copied/media/acct_1/one",
        "copied/results/three",
        "copied/results/two"
      ])
    })
  )

  it.live("says what to set without S3_BUCKET, and what is wrong with a bucket it cannot use", () =>
    Effect.gen(function* () {
      const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-copy-"))
      const unset = yield* blobsCopy(dataDir, {})
      expect(unset.code).toBe(1)
      expect(unset.stderr).toContain("error: Set S3_BUCKET")
      const missing = yield* blobsCopy(dataDir, { ...s3.env, S3_BUCKET: "not-there" })
      expect(missing.code).toBe(1)
      expect(missing.stderr).toContain("S3 bucket not-there under copied/ at")
      expect(missing.stderr).toContain("does not exist")
    })
  )
})
