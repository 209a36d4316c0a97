/** GET /api/v1/prices and GET /api/v1/models, from the Pricer and the Catalog in force. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Catalog, Pricer } from "@taskmeter/kernel"
import { Api } from "../Api.ts"
import type { ModelInfo } from "../api/CatalogApi.ts"

const modelInfo = (model: Catalog.ModelDefinition): ModelInfo => ({
  slug: model.slug,
  category: model.category,
  title: model.title,
  description: model.description,
  outputs: model.outputs,
  deprecated: model.deprecated,
  fields: model.fields,
  inputSchema: model.jsonSchema
})

export const layer = HttpApiBuilder.group(Api, "catalog", (handlers) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog.Catalog
    const pricer = yield* Pricer.Pricer
    const models = { models: catalog.models.map(modelInfo) }
    return handlers.handle("prices", () => pricer.prices).handle("models", () => Effect.succeed(models))
  })
)
