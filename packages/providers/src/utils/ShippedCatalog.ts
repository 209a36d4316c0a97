/** The kernel's catalog of the 33 models, for code that needs model definitions outside a layer. */
import { Catalog } from "@taskmeter/kernel"
import { Effect } from "effect"

export const models: ReadonlyArray<Catalog.ModelDefinition> = Effect.runSync(
  Effect.gen(function* () {
    return (yield* Catalog.Catalog).models
  }).pipe(Effect.provide(Catalog.layer))
)
