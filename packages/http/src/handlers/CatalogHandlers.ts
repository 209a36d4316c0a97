/**
 * GET /api/v1/prices and GET /api/v1/models, from the Pricer and the Catalog in force; each model
 * names the provider that runs it, from the Executors when the server has them (null otherwise).
 */
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Catalog, Executors, Pricer } from "@taskmeter/kernel"
import { Api } from "../Api.ts"
import type { ModelInfo } from "../api/CatalogApi.ts"

const modelInfo = (model: Catalog.ModelDefinition, provider: string | null): ModelInfo => ({
  slug: model.slug,
  category: model.category,
  title: model.title,
  description: model.description,
  outputs: model.outputs,
  deprecated: model.deprecated,
  fields: model.fields,
  inputSchema: model.jsonSchema,
  provider
})

export const layer = HttpApiBuilder.group(Api, "catalog", (handlers) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog.Catalog
    const pricer = yield* Pricer.Pricer
    const executors = yield* Effect.serviceOption(Executors.Executors)
    const providerOf = (slug: string) =>
      Option.match(executors, { onNone: () => null, onSome: (e) => e.adapterFor(slug)?.provider ?? null })
    const models = { models: catalog.models.map((model) => modelInfo(model, providerOf(model.slug))) }
    return handlers.handle("prices", () => pricer.prices).handle("models", () => Effect.succeed(models))
  })
)
