/**
 * GET /api/v1/prices and GET /api/v1/models, from the Pricer and the Catalog in force; each model
 * names the provider that runs it, from the Executors when the server has them (null otherwise),
 * and the callable chat models are listed as `data` when the chat services are composed in.
 */
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Catalog, ChatCompletions, Executors, Pricer } from "@taskmeter/kernel"
import { Api } from "../Api.ts"
import type { ModelInfo } from "../api/CatalogApi.ts"
import * as ChatResponses from "../chat/ChatResponses.ts"

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
    const models = catalog.models.map((model) => modelInfo(model, providerOf(model.slug)))
    const chat = yield* Effect.serviceOption(ChatCompletions.ChatCompletions)
    const chatModels = Option.match(chat, {
      onNone: () => Effect.succeed([]),
      onSome: (completions) => Effect.map(completions.models, (callable) => ChatResponses.models(callable).data)
    })
    return handlers
      .handle("prices", () => pricer.prices)
      .handle("models", () => Effect.map(chatModels, (data) => ({ models, object: "list" as const, data })))
  })
)
