import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Catalog, Pricer } from "@taskmeter/kernel"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

layer(T.layer(stores[0]!), { excludeTestServices: true })("public catalog", (it) => {
  describe("GET /api/v1/prices", () => {
    it.effect("returns the Pricer's public price list without credentials", () =>
      Effect.gen(function* () {
        const reply = yield* T.call("/api/v1/prices")
        expect(reply.status).toBe(200)
        expect(reply.body).toEqual(yield* (yield* Pricer.Pricer).prices)
        expect(reply.body.models.find((entry: { model: string }) => entry.model === T.MODEL)).toMatchObject({
          enabled: true,
          currency: "USD",
          priceMicros: T.MODEL_PRICE
        })
      })
    )
  })

  describe("GET /api/v1/models", () => {
    it.effect("lists every model with its fields and input JSON Schema without credentials", () =>
      Effect.gen(function* () {
        const catalog = yield* Catalog.Catalog
        const reply = yield* T.call("/api/v1/models")
        expect(reply.status).toBe(200)
        expect(reply.body.models.map((model: { slug: string }) => model.slug)).toEqual(catalog.models.map((model) => model.slug))
        const model = reply.body.models.find((entry: { slug: string }) => entry.slug === "alpha-pro-edit-economy")
        const definition = yield* catalog.get("alpha-pro-edit-economy")
        expect(model).toEqual({
          slug: definition.slug,
          category: "image",
          title: definition.title,
          description: definition.description,
          outputs: definition.outputs,
          deprecated: false,
          fields: definition.fields,
          inputSchema: definition.jsonSchema,
          // This test server has no Executors: no provider is named.
          provider: null
        })
        expect(model.fields.find((field: { name: string }) => field.name === "imageUrls")).toMatchObject({
          required: true,
          media: true,
          maxItems: 10
        })
      })
    )
  })
})
