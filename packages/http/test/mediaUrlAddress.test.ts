/**
 * POST /api/v1/jobs refuses media URLs that point inside the service's network (metadata,
 * loopback and private addresses in any notation, localhost, credentials) with 400
 * INVALID_MODEL_INPUT naming the field, and reserves nothing. The rules are the kernel's
 * (`AddressPolicy`, `ModelField`); this checks the answer over HTTP, on the memory store only.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as T from "./support/TestServer.ts"

layer(T.layer({ name: "storage-memory", layer: () => MemoryStore.layer }), { excludeTestServices: true })(
  "media URLs over HTTP",
  (it) => {
    it.effect("refuses an https URL naming a metadata, loopback or private address, or localhost: 400, nothing reserved", () =>
      Effect.gen(function* () {
        const who = yield* T.customer()
        for (const url of [
          "https://169.254.169.254/latest/meta-data/iam",
          "https://2130706433/a.png",
          "https://[::ffff:10.0.0.1]/a.png",
          "https://localhost/a.png",
          "https://user:pass@cdn.example.com/a.png"
        ]) {
          const reply = yield* T.submit(who, { model: T.MEDIA_MODEL, input: { prompt: "make it blue", imageUrls: [url] } })
          expect(reply.status, url).toBe(400)
          expect(reply.body.code, url).toBe("INVALID_MODEL_INPUT")
          expect(reply.body.error, url).toMatch(/^input\.imageUrls\[0\]: must be an https URL of a public host/)
        }
        expect((yield* T.usage(who)).body).toMatchObject({ reservedMicros: 0, availableMicros: 10_000_000 })
      })
    )

    it.effect("admits a public https URL", () =>
      Effect.gen(function* () {
        const reply = yield* T.submit(yield* T.customer(), {
          model: T.MEDIA_MODEL,
          input: { prompt: "make it blue", imageUrls: ["https://cdn.example.com/a.png"] }
        })
        expect(reply.status).toBe(202)
      })
    )
  }
)
