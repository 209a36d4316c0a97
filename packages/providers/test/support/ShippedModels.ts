import { Effect } from "effect"
import { Catalog } from "@taskmeter/kernel"

export const ShippedModels: ReadonlyMap<string, Catalog.ModelDefinition> = new Map(
  Effect.runSync(
    Effect.gen(function* () {
      return (yield* Catalog.Catalog).models
    }).pipe(Effect.provide(Catalog.layer))
  ).map((model) => [model.slug, model])
)
