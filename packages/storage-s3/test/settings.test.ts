import { describe, expect, it } from "@effect/vitest"
import { S3Settings } from "@taskmeter/storage-s3"
import { ConfigProvider, Effect, Option } from "effect"

const read = (env: Record<string, string>) =>
  S3Settings.config.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })))

describe("S3Settings.config", () => {
  it.effect("is none without S3_BUCKET: blobs stay under DATA_DIR/blobs", () =>
    Effect.gen(function* () {
      expect(yield* read({})).toEqual(Option.none())
      expect(yield* read({ S3_PREFIX: "x", S3_REGION: "eu-west-1" })).toEqual(Option.none())
    })
  )

  it.effect("reads the bucket with its defaults, and normalizes the prefix to end in one slash", () =>
    Effect.gen(function* () {
      expect(yield* read({ S3_BUCKET: "media" })).toEqual(
        Option.some({
          bucket: "media",
          prefix: "",
          endpoint: Option.none(),
          region: "us-east-1",
          forcePathStyle: false,
          presignedDownloads: false
        })
      )
      const all = yield* read({
        S3_BUCKET: "media",
        S3_PREFIX: "/taskmeter/prod/",
        S3_ENDPOINT: "http://127.0.0.1:9000/",
        S3_REGION: "auto",
        S3_FORCE_PATH_STYLE: "true",
        S3_PRESIGNED_DOWNLOADS: "true"
      })
      expect(all).toEqual(
        Option.some({
          bucket: "media",
          prefix: "taskmeter/prod/",
          endpoint: Option.some("http://127.0.0.1:9000"),
          region: "auto",
          forcePathStyle: true,
          presignedDownloads: true
        })
      )
      expect(S3Settings.describe(Option.getOrThrow(all))).toBe("S3 bucket media under taskmeter/prod/ at http://127.0.0.1:9000")
    })
  )

  it.effect("refuses presigned downloads without a bucket, and a malformed endpoint", () =>
    Effect.gen(function* () {
      const presigned = yield* Effect.flip(read({ S3_PRESIGNED_DOWNLOADS: "true" }))
      expect(presigned.message).toContain("S3_PRESIGNED_DOWNLOADS=true needs S3_BUCKET")
      const endpoint = yield* Effect.flip(read({ S3_BUCKET: "media", S3_ENDPOINT: "not a url" }))
      expect(endpoint.message).toContain("S3_ENDPOINT")
    })
  )
})
