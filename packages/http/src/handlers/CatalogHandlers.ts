/**
 * GET /api/v1/prices and GET /api/v1/models, from the Pricer and the Catalog in force; the models
 * also list the callable chat models as `data` when the chat services are composed in.
 */
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Catalog, ChatCompletions, Pricer } from "@taskmeter/kernel"
import { Api } from "../Api.ts"
import type { ModelInfo } from "../api/CatalogApi.ts"
import * as ChatResponses from "../chat/ChatResponses.ts"

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
    const chat = yield* Effect.serviceOption(ChatCompletions.ChatCompletions)
    const models = catalog.models.map(modelInfo)
    const chatModels = Option.match(chat, {
      onNone: () => Effect.succeed([]),
      onSome: (completions) => Effect.map(completions.models, (callable) => ChatResponses.models(callable).data)
    })
    return handlers
      .handle("prices", () => pricer.prices)
      .handle("models", () => Effect.map(chatModels, (data) => ({ models, object: "list" as const, data })))
  })
)
