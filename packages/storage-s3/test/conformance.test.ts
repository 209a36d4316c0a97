import { afterAll, beforeAll } from "@effect/vitest"
import { StoreConformance } from "@taskmeter/kernel/testing"
import { MemoryStore } from "@taskmeter/storage-memory"
import { S3Store } from "@taskmeter/storage-s3"
import { LocalS3 } from "@taskmeter/storage-s3/testing"
import { Layer } from "effect"

let server: LocalS3.LocalS3
beforeAll(async () => {
  server = await LocalS3.start({ prefix: "conformance/" })
})
afterAll(() => server.close())

// The other ports from memory; the blobs over HTTP in a real (local) S3 server.
StoreConformance.suite(
  "S3 blob",
  () => Layer.merge(MemoryStore.layer, S3Store.layer(server.settings, { credentials: LocalS3.credentials })),
  { groups: ["blobs"] }
)
