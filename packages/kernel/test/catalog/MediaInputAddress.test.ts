/**
 * Media URLs that point inside (credentials, local names, loopback, private, link-local or
 * metadata addresses in any notation the URL parser reads) are refused at admission as
 * INVALID_MODEL_INPUT naming the field; public https URLs and media references pass.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Catalog, Errors } from "../../src/index.ts"

const SINGLE = "epsilon-3-1-pro-image-to-video-channel-low-price"
const LIST = "alpha-pro-edit-economy"
const URL_OK = "https://cdn.example.com/images/cat.png"

const INSIDE = [
  "https://169.254.169.254/latest/meta-data/iam",
  "https://[fd00:ec2::254]/latest/meta-data/",
  "https://127.0.0.1/a.png",
  "https://2130706433/a.png",
  "https://0x7f.1/a.png",
  "https://0177.0.0.1/a.png",
  "https://[::ffff:127.0.0.1]/a.png",
  "https://[::1]/a.png",
  "https://10.0.0.1/a.png",
  "https://192.168.1.20:8443/a.png",
  "https://172.20.0.1/a.png",
  "https://100.64.0.1/a.png",
  "https://[fe80::1]/a.png",
  "https://localhost/a.png",
  "https://localhost./a.png",
  "https://api.localhost/a.png",
  "https://metadata.google.internal/computeMetadata/v1/",
  "https://user:secret@cdn.example.com/a.png",
  "https://user@cdn.example.com/a.png"
]

layer(Catalog.layer)("media URLs at admission", (it) => {
  it.effect("refuses URLs that point inside, naming the field", () =>
    Effect.gen(function* () {
      const catalog = yield* Catalog.Catalog
      for (const url of INSIDE) {
        const single = yield* Effect.flip(catalog.validate(SINGLE, { prompt: "a slow pan", imageUrl: url }))
        expect(single, url).toBeInstanceOf(Errors.InvalidModelInput)
        expect(single.code).toBe("INVALID_MODEL_INPUT")
        expect(single.message, url).toMatch(/^input\.imageUrl: must be an https URL of a public host: this one /)
        const list = yield* Effect.flip(catalog.validate(LIST, { prompt: "sharpen", imageUrls: [URL_OK, url] }))
        expect(list.message, url).toMatch(/^input\.imageUrls\[1\]: must be an https URL of a public host/)
      }
    })
  )

  it.effect("says what is wrong with the URL", () =>
    Effect.gen(function* () {
      const catalog = yield* Catalog.Catalog
      const message = (url: string) =>
        Effect.map(Effect.flip(catalog.validate(SINGLE, { prompt: "a slow pan", imageUrl: url })), (error) => error.message)
      expect(yield* message("https://169.254.169.254/latest/meta-data/iam")).toContain("non-public address")
      expect(yield* message("https://localhost/a.png")).toContain("local host")
      expect(yield* message("https://user:secret@cdn.example.com/a.png")).toContain("credentials")
      // Other schemes keep the general rule alone, not both messages.
      expect(yield* message("http://127.0.0.1/a.png")).toBe(
        "input.imageUrl: must be an https URL or a media reference (media:<uuid>)"
      )
    })
  )

  it.effect("admits public https URLs, whatever their host name's words", () =>
    Effect.gen(function* () {
      const catalog = yield* Catalog.Catalog
      for (const url of [
        URL_OK,
        "https://93.184.215.14/a.png",
        "https://[2606:4700::1111]/a.png",
        "https://localhost.example.com/a.png"
      ]) {
        const single = yield* catalog.validate(SINGLE, { prompt: "a slow pan", imageUrl: url })
        expect(single.input.imageUrl).toBe(url)
      }
    })
  )
})
