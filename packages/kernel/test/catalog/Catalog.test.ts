import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Catalog, MediaReference } from "../../src/index.ts"
import { models } from "../../src/catalog/models/index.ts"
import { expectedModels, type ExpectedField } from "./CatalogSpec.ts"

const URL_OK = "https://cdn.example.com/images/cat.png"
const REF = "media:0f8fad5b-d9cb-469f-a165-70867728950e"

const validValue = (field: ExpectedField): unknown => {
  if (field.type === "array") return Array.from({ length: field.allowedCounts?.[0] ?? 1 }, () => URL_OK)
  if (field.media) return URL_OK
  if (field.options !== undefined) return field.default ?? field.options[0]
  if (field.type === "integer") return field.minimum
  return "x".repeat(Math.max(field.minLength ?? 1, 1))
}

const mustSend = (field: ExpectedField) => field.required && field.default === undefined

const minimalInput = (fields: ReadonlyArray<ExpectedField>) =>
  Object.fromEntries(fields.filter(mustSend).map((field) => [field.name, validValue(field)]))

const withDefaults = (fields: ReadonlyArray<ExpectedField>) => ({
  ...Object.fromEntries(fields.flatMap((field) => (field.default === undefined ? [] : [[field.name, field.default] as const]))),
  ...minimalInput(fields)
})

/** Values that break exactly one rule of the field, with the rule's name for the test title. */
const invalidValues = (field: ExpectedField): ReadonlyArray<readonly [string, unknown]> => {
  const cases: Array<readonly [string, unknown]> = []
  if (field.type === "array") {
    cases.push(["not an array", URL_OK], ["too many items", Array.from({ length: field.maxItems! + 1 }, () => URL_OK)])
    cases.push(["an http item", ["http://cdn.example.com/a.png"]])
    if (field.required || field.allowedCounts !== undefined) cases.push(["no items", []])
    for (let n = 1; n <= field.maxItems!; n++) {
      if (field.allowedCounts !== undefined && !field.allowedCounts.includes(n)) {
        cases.push([`${n} items`, Array.from({ length: n }, () => URL_OK)])
      }
    }
  } else if (field.type === "integer") {
    cases.push(["a string", String(field.minimum)], ["below minimum", field.minimum! - 1])
    cases.push(["above maximum", field.maximum! + 1], ["a fraction", field.minimum! + 0.5])
  } else {
    cases.push(["a number", 42], ["null", null])
    if (field.media) cases.push(["an http URL", "http://cdn.example.com/a.png"])
    if (field.options !== undefined) cases.push(["an unlisted option", "not-an-option"])
    if ((field.minLength ?? 0) > 0) cases.push(["too short", "x".repeat(field.minLength! - 1)])
    if (field.maxLength !== undefined) cases.push(["too long", "x".repeat(field.maxLength + 1)])
  }
  return cases
}

/** Values on the edge of the field's rules, which must pass. */
const boundaryValues = (field: ExpectedField): ReadonlyArray<unknown> => [
  ...(field.options ?? []),
  ...(field.type === "integer" ? [field.minimum, field.maximum] : []),
  ...(field.type === "string" && !field.media && field.options === undefined
    ? [field.maxLength === undefined ? "x".repeat(30000) : "x".repeat(field.maxLength), "x".repeat(field.minLength ?? 0)]
    : []),
  ...(field.type === "array"
    ? (field.allowedCounts ?? [field.maxItems!]).map((n) => Array.from({ length: n }, (_, i) => (i % 2 ? REF : URL_OK)))
    : [])
]

layer(Catalog.layer)("Catalog", (it) => {
  it.effect("ships exactly the 33 models of the spec, none deprecated", () =>
    Effect.gen(function* () {
      const catalog = yield* Catalog.Catalog
      expect(catalog.models.map((model) => model.slug).sort()).toEqual(expectedModels.map((model) => model.slug).sort())
      expect(catalog.models).toHaveLength(33)
      expect(catalog.models.every((model) => model.deprecated === false)).toBe(true)
    })
  )

  for (const expected of expectedModels) {
    describe(expected.slug, () => {
      it.effect("has the spec's category and fields", () =>
        Effect.gen(function* () {
          const model = yield* (yield* Catalog.Catalog).get(expected.slug)
          expect(model.category).toBe(expected.category)
          expect(model.fields.map(({ description: _, ...field }) => field)).toEqual(expected.fields)
        })
      )

      it.effect("accepts a minimal input and applies every default", () =>
        Effect.gen(function* () {
          const catalog = yield* Catalog.Catalog
          const result = yield* catalog.validate(expected.slug, minimalInput(expected.fields))
          expect(result.input).toEqual(withDefaults(expected.fields))
          expect(result.model.slug).toBe(expected.slug)
        })
      )

      it.effect("keeps the values a caller sends instead of the defaults", () =>
        Effect.gen(function* () {
          const catalog = yield* Catalog.Catalog
          const full = Object.fromEntries(
            expected.fields.map((field) => {
              const other = field.options?.find((option) => option !== field.default)
              return [field.name, other ?? validValue(field)]
            })
          )
          expect((yield* catalog.validate(expected.slug, full)).input).toEqual(full)
        })
      )

      for (const field of expected.fields) {
        if (mustSend(field)) {
          it.effect(`rejects a missing ${field.name}`, () =>
            Effect.gen(function* () {
              const { [field.name]: _, ...input } = minimalInput(expected.fields)
              const error = yield* Effect.flip((yield* Catalog.Catalog).validate(expected.slug, input))
              expect(error.code).toBe("INVALID_MODEL_INPUT")
              expect(error.message).toContain(`input.${field.name}: is required`)
            })
          )
        }
        for (const [rule, value] of invalidValues(field)) {
          it.effect(`rejects ${field.name} as ${rule}`, () =>
            Effect.gen(function* () {
              const input = { ...minimalInput(expected.fields), [field.name]: value }
              const error = yield* Effect.flip((yield* Catalog.Catalog).validate(expected.slug, input))
              expect(error.code).toBe("INVALID_MODEL_INPUT")
              expect(error.status).toBe(400)
              expect(error.message).toMatch(new RegExp(`input\\.${field.name}(\\[\\d+\\])?: (must|is)`))
            })
          )
        }
        it.effect(`accepts ${field.name} on the edges of its rules`, () =>
          Effect.gen(function* () {
            const catalog = yield* Catalog.Catalog
            for (const value of boundaryValues(field)) {
              const input = { ...minimalInput(expected.fields), [field.name]: value }
              expect((yield* catalog.validate(expected.slug, input)).input[field.name]).toEqual(value)
            }
          })
        )
      }

      it.effect("rejects an unknown field and names it", () =>
        Effect.gen(function* () {
          const input = { ...minimalInput(expected.fields), negativePrompt: "blur" }
          const error = yield* Effect.flip((yield* Catalog.Catalog).validate(expected.slug, input))
          expect(error._tag).toBe("InvalidModelInput")
          expect(error.message).toContain(`input.negativePrompt: is not a field of ${expected.slug}`)
        })
      )

      it.effect("publishes a closed draft 2020-12 JSON Schema of the same fields", () =>
        Effect.gen(function* () {
          const { jsonSchema } = yield* (yield* Catalog.Catalog).get(expected.slug)
          expect(jsonSchema.$schema).toBe("https://json-schema.org/draft/2020-12/schema")
          expect(jsonSchema.type).toBe("object")
          expect(jsonSchema.additionalProperties).toBe(false)
          expect(JSON.stringify(jsonSchema)).not.toContain("$ref")
          const properties = jsonSchema.properties as Record<string, Record<string, unknown>>
          expect(Object.keys(properties)).toEqual(expected.fields.map((field) => field.name))
          expect(jsonSchema.required ?? []).toEqual(expected.fields.filter(mustSend).map((field) => field.name))
          for (const field of expected.fields) {
            const property = properties[field.name]!
            expect(property.type).toBe(field.type)
            expect(property.default).toEqual(field.default)
            expect(property.enum).toEqual(field.options)
            expect(property.minLength).toEqual(field.minLength)
            expect(property.maxLength).toEqual(field.maxLength)
            expect(property.minimum).toEqual(field.minimum)
            expect(property.maximum).toEqual(field.maximum)
            expect(property.maxItems).toEqual(field.maxItems)
          }
        })
      )
    })
  }

  it.effect("fails an unknown slug with MODEL_NOT_FOUND naming the slug, and no route (servers name theirs)", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip((yield* Catalog.Catalog).validate("alpha-9-ultra", { prompt: "x" }))
      expect(error.code).toBe("MODEL_NOT_FOUND")
      expect(error.status).toBe(404)
      expect(error.message).toContain('"alpha-9-ultra"')
      expect(error.message).toContain("use the slug of a listed model")
      expect(error.message).not.toContain("/api/")
    })
  )

  it.effect("rejects an input that is not an object", () =>
    Effect.gen(function* () {
      const catalog = yield* Catalog.Catalog
      for (const input of [null, undefined, "a fox", 42, [], [{ prompt: "a fox" }]]) {
        const error = yield* Effect.flip(catalog.validate("song-lyrics", input))
        expect(error.code).toBe("INVALID_MODEL_INPUT")
        expect(error.message).toContain("input: must be a JSON object")
      }
    })
  )

  it.effect("reports every broken rule, each naming its field", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        (yield* Catalog.Catalog).validate("alpha-pro-text-to-image-economy", {
          prompt: "",
          aspectRatio: "2:1",
          colour: "red"
        })
      )
      expect(error.message).toContain("input.prompt: must be 1 to 20000 characters long")
      expect(error.message).toContain('input.aspectRatio: must be one of "1:1", "16:9"')
      expect(error.message).toContain("input.colour: is not a field of alpha-pro-text-to-image-economy")
    })
  )

  it.effect("refuses a string the store cannot hold, naming where it is", () =>
    Effect.gen(function* () {
      const catalog = yield* Catalog.Catalog
      const cases: ReadonlyArray<readonly [string, unknown, string]> = [
        ["song-lyrics", { prompt: "a\u0000b" }, "input.prompt: contains U+0000 (NUL)"],
        ["song-lyrics", { prompt: "\ud800" }, "input.prompt: contains an unpaired surrogate"],
        ["song-lyrics", { prompt: "ok\udfff" }, "input.prompt: contains an unpaired surrogate"],
        [
          "alpha-pro-edit-economy",
          { prompt: "x", imageUrls: [URL_OK, `${URL_OK}\u0000`] },
          "input.imageUrls[1]: contains U+0000"
        ],
        // Before the unknown key is reported: its name could not be stored either.
        ["song-lyrics", { prompt: "x", ["col\u0000our"]: "red" }, 'input["col\\u0000our"]: its name contains U+0000']
      ]
      for (const [slug, input, expected] of cases) {
        const error = yield* Effect.flip(catalog.validate(slug, input))
        expect(error.code).toBe("INVALID_MODEL_INPUT")
        expect(error.message).toContain(expected)
      }
      // A surrogate pair (an emoji) is text like any other.
      const { input } = yield* catalog.validate("song-lyrics", { prompt: "a song about 🦊 and \ud83d\ude00" })
      expect(input.prompt).toBe("a song about 🦊 and 😀")
    })
  )

  it.effect("lists the first 20 problems, then how many more", () =>
    Effect.gen(function* () {
      const input: Record<string, unknown> = { prompt: "a fox" }
      for (let i = 0; i < 20_000; i++) input[`unknown${i}`] = i
      const error = yield* Effect.flip((yield* Catalog.Catalog).validate("song-lyrics", input))
      expect(error.code).toBe("INVALID_MODEL_INPUT")
      expect(error.message).toContain("input.unknown0: is not a field of song-lyrics")
      expect(error.message).toContain("input.unknown19: is not a field")
      expect(error.message).not.toContain("input.unknown20:")
      expect(error.message).toMatch(/; and 19980 more$/)
      expect(error.message.length).toBeLessThan(4000)
      // The structured problems are the same first 20.
      expect(error).toMatchObject({ model: "song-lyrics" })
      const problems = "problems" in error ? error.problems : undefined
      expect(problems).toHaveLength(20)
      expect(problems?.[19]).toMatch(/^input\.unknown19: is not a field/)
    })
  )

  describe("media fields", () => {
    const accepted = [URL_OK, "https://example.com", "https://93.184.215.14:8443/a.png?sig=abc#x", REF]
    const rejected = [
      "http://cdn.example.com/a.png",
      "data:image/png;base64,iVBORw0KGgo=",
      "file:///etc/passwd",
      "javascript:alert(1)",
      "ftp://example.com/a.png",
      "HTTPS:/example.com",
      "https:///a.png",
      " https://example.com/a.png",
      "https://exa mple.com/a.png",
      "https:/\\example.com/a.png",
      "https://\\example.com/a.png",
      "//example.com/a.png",
      "cdn.example.com/a.png",
      "media:not-a-uuid",
      "media:0F8FAD5B-D9CB-469F-A165-70867728950E",
      ""
    ]

    it.effect("take an https URL with a host or a media reference", () =>
      Effect.gen(function* () {
        const catalog = yield* Catalog.Catalog
        for (const url of accepted) {
          const single = yield* catalog.validate("epsilon-3-1-pro-image-to-video-channel-low-price", {
            prompt: "a slow pan",
            imageUrl: url
          })
          expect(single.input.imageUrl).toBe(url)
          const list = yield* catalog.validate("alpha-pro-edit-economy", { prompt: "sharpen", imageUrls: [url] })
          expect(list.input.imageUrls).toEqual([url])
        }
      })
    )

    it.effect("reject every other scheme or form", () =>
      Effect.gen(function* () {
        const catalog = yield* Catalog.Catalog
        for (const url of rejected) {
          const single = yield* Effect.flip(
            catalog.validate("epsilon-3-1-fast-start-end-to-video-channel-low-price", {
              prompt: "a slow pan",
              firstFrameUrl: URL_OK,
              lastFrameUrl: url
            })
          )
          expect(single.message).toBe("input.lastFrameUrl: must be an https URL or a media reference (media:<uuid>)")
          const list = yield* Effect.flip(
            catalog.validate("alpha-pro-edit-economy", {
              prompt: "sharpen",
              imageUrls: [URL_OK, url]
            })
          )
          expect(list.message).toContain("input.imageUrls[1]: must be an https URL or a media reference")
        }
      })
    )

    it.effect("yield their media references for ownership checks, once each", () =>
      Effect.gen(function* () {
        const catalog = yield* Catalog.Catalog
        const other = MediaReference.make()
        const edit = yield* catalog.validate("delta-omni-flash-video-edit-economy", {
          prompt: "make it rain",
          videoUrl: other,
          imageUrls: [REF, URL_OK, REF]
        })
        expect(catalog.mediaReferences(edit.model, edit.input)).toEqual([other, REF])
        const plain = yield* catalog.validate("epsilon-3-1-pro-image-to-video-channel-low-price", {
          prompt: "a slow pan",
          imageUrl: URL_OK
        })
        expect(catalog.mediaReferences(plain.model, plain.input)).toEqual([])
      })
    )
  })

  describe("model-specific rules", () => {
    it.effect("delta Omni Flash takes 1 or 3 images, never 2", () =>
      Effect.gen(function* () {
        const catalog = yield* Catalog.Catalog
        const slug = "delta-omni-flash-image-to-video-economy"
        for (const count of [1, 3]) {
          const ok = yield* catalog.validate(slug, { imageUrls: Array.from({ length: count }, () => URL_OK) })
          expect(ok.input.imageUrls).toHaveLength(count)
        }
        const two = yield* Effect.flip(catalog.validate(slug, { imageUrls: [URL_OK, URL_OK] }))
        expect(two.message).toBe("input.imageUrls: must hold 1 or 3 items (other counts are not supported)")
        const edit = "delta-omni-flash-video-edit-economy"
        expect((yield* catalog.validate(edit, { prompt: "rain", videoUrl: URL_OK })).input).not.toHaveProperty("imageUrls")
        const editTwo = yield* Effect.flip(catalog.validate(edit, { prompt: "rain", videoUrl: URL_OK, imageUrls: [REF, REF] }))
        expect(editTwo.message).toContain("input.imageUrls: must hold 1 or 3 items")
      })
    )

    it.effect("durations come from each family's set and type", () =>
      Effect.gen(function* () {
        const catalog = yield* Catalog.Catalog
        const delta = "delta-omni-flash-text-to-video-economy"
        for (const duration of ["4", "6", "8", "10"]) {
          expect((yield* catalog.validate(delta, { duration })).input.duration).toBe(duration)
        }
        for (const duration of [6, "5", "12"]) {
          expect((yield* Effect.flip(catalog.validate(delta, { duration }))).message).toContain("input.duration")
        }
        const epsilon = "epsilon-3-1-pro-text-to-video-channel-low-price"
        expect((yield* catalog.validate(epsilon, { prompt: "a storm", duration: "8" })).input.duration).toBe("8")
        expect((yield* catalog.validate(epsilon, { prompt: "a storm" })).input).not.toHaveProperty("duration")
        expect((yield* Effect.flip(catalog.validate(epsilon, { prompt: "a storm", duration: "6" }))).message).toBe(
          'input.duration: must be one of "8"'
        )
        const gamma = "gamma-imagine-v1-5-text-to-video-economy"
        expect((yield* catalog.validate(gamma, { prompt: "a storm" })).input.duration).toBe(6)
        expect((yield* catalog.validate(gamma, { prompt: "a storm", duration: 15 })).input.duration).toBe(15)
        expect((yield* Effect.flip(catalog.validate(gamma, { prompt: "a storm", duration: 16 }))).message).toBe(
          "input.duration: must be an integer from 6 to 15"
        )
      })
    )

    it.effect('numImages is a string from "1" to "12", "1" by default', () =>
      Effect.gen(function* () {
        const catalog = yield* Catalog.Catalog
        const slug = "gamma-imagine-2-0-text-to-image-economy"
        expect((yield* catalog.validate(slug, { prompt: "a fox" })).input.numImages).toBe("1")
        for (let n = 1; n <= 12; n++) {
          expect((yield* catalog.validate(slug, { prompt: "a fox", numImages: String(n) })).input.numImages).toBe(String(n))
        }
        for (const numImages of [3, "0", "13", "01", " 3"]) {
          const error = yield* Effect.flip(catalog.validate(slug, { prompt: "a fox", numImages }))
          expect(error.message).toMatch(/^input\.numImages: must be one of "1", "2",/)
        }
      })
    )

    it.effect("gamma Imagine Image models take a model version, g-4.2 by default", () =>
      Effect.gen(function* () {
        const catalog = yield* Catalog.Catalog
        for (const slug of ["gamma-imagine-image-text-to-image-economy", "gamma-imagine-image-image-to-image-economy"]) {
          expect((yield* catalog.validate(slug, { prompt: "a fox" })).input.model).toBe("g-4.2")
          expect((yield* catalog.validate(slug, { prompt: "a fox", model: "g-3" })).input.model).toBe("g-3")
          expect((yield* Effect.flip(catalog.validate(slug, { prompt: "a fox", model: "g-5" }))).message).toBe(
            'input.model: must be one of "g-3", "g-4", "g-4.1", "g-4.2"'
          )
        }
      })
    )

    it.effect("picgen 2.5 needs a prompt: its empty default would break its own minimum", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip((yield* Catalog.Catalog).validate("picgen-2-5-flare-text-to-image-economy", {}))
        expect(error.message).toBe("input.prompt: is required")
      })
    )

    it.effect("delta Omni Flash fills in a default prompt within its bounds", () =>
      Effect.gen(function* () {
        const catalog = yield* Catalog.Catalog
        const { input } = yield* catalog.validate("delta-omni-flash-text-to-video-economy", {})
        expect(typeof input.prompt).toBe("string")
        expect((input.prompt as string).length).toBeGreaterThan(20)
        expect((input.prompt as string).length).toBeLessThanOrEqual(2048)
      })
    )
  })

  describe("search", () => {
    it.effect("matches every word, case-insensitively, on slug, title and description", () =>
      Effect.gen(function* () {
        const catalog = yield* Catalog.Catalog
        const lyrics = catalog.search("LYRICS").map((model) => model.slug)
        expect(lyrics[0]).toBe("song-lyrics")
        expect(lyrics).toContain("song-custom-v5")
        expect(catalog.search("alpha edit").map((model) => model.slug)).toEqual(["alpha-pro-edit-economy"])
        expect(catalog.search("  ")).toHaveLength(33)
        expect(catalog.search("teleport")).toEqual([])
      })
    )

    it.effect("ranks name matches first and filters by category", () =>
      Effect.gen(function* () {
        const catalog = yield* Catalog.Catalog
        const textToVideo = catalog.search("text to video").map((model) => model.slug)
        expect(textToVideo.slice(0, 4).every((slug) => slug.includes("text-to-video"))).toBe(true)
        expect(catalog.search("", "video")).toHaveLength(11)
        expect(catalog.search("", "audio")).toHaveLength(6)
        expect(catalog.search("song", "text").map((model) => model.slug)).toEqual(["song-lyrics"])
        expect(catalog.search("epsilon", "image")).toEqual([])
      })
    )
  })
})

describe("Catalog.make", () => {
  it("refuses a model list with a repeated slug", () => {
    expect(() => Catalog.make([...models, models[0]!])).toThrow(/share a slug/)
  })
})
