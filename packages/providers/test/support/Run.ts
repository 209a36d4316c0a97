import { Effect } from "effect"
import type { Catalog, Provider } from "@taskmeter/kernel"
import { AdapterConformance, SampleInputs } from "@taskmeter/providers/testing"
import { ShippedModels } from "./ShippedModels.ts"

let counter = 0

/** Submits the sample input of `model` (with `overrides`) and polls to the end. */
export const run = (adapter: Provider.ProviderV1, model: string, overrides: Catalog.ModelInput = {}) =>
  Effect.gen(function* () {
    const definition = ShippedModels.get(model)!
    const input = { ...SampleInputs.sampleInput(definition), ...overrides }
    const result = yield* AdapterConformance.runToEnd(
      adapter,
      { model, input, reference: `task-${++counter}` },
      { pollIntervalMs: 1 }
    )
    return { input, result }
  })

export const outputsOf = (result: Provider.PollResult | { readonly _tag: "NeverFinished" }) => {
  if (result._tag !== "Succeeded") throw new Error(`expected Succeeded, got ${JSON.stringify(result)}`)
  return result.outputs
}
