/**
 * The part every protocol base adapter shares (`TaskMarket`, `FalQueue`, `Replicate`, `SongApi`): a
 * table of entries by our model slug, the `ProviderV1` around it, and a lookup that fails a slug the
 * table lacks with `UpstreamError.unsupportedModel` before any request. The protocol gives only its
 * calls, each handed the table entry of the request's model.
 */
import { Effect } from "effect"
import type { Provider } from "@taskmeter/kernel"
import type * as ProviderConfig from "./ProviderConfig.ts"
import * as UpstreamError from "./UpstreamError.ts"

/** What a base adapter takes: the shared options, the provider's name and its table. */
export interface Options<Model> extends ProviderConfig.AdapterOptions {
  readonly provider: string
  readonly models: { readonly [slug: string]: Model }
}

type Call<K extends "submit" | "poll" | "cancel" | "callback", Model> = (
  entry: Model,
  request: Parameters<NonNullable<Provider.ProviderV1[K]>>[0]
) => ReturnType<NonNullable<Provider.ProviderV1[K]>>

export interface Calls<Model> {
  readonly submit: Call<"submit", Model>
  readonly poll: Call<"poll", Model>
  /** Left out when the protocol cannot cancel a job. */
  readonly cancel?: Call<"cancel", Model> | undefined
  /** The job a callback body names; left out when the upstream never calls back. */
  readonly callback?: Call<"callback", Model> | undefined
}

export const make = <Model>(options: Options<Model>, calls: Calls<Model>): Provider.ProviderV1 => {
  const entryOf = (slug: string) =>
    Object.hasOwn(options.models, slug)
      ? Effect.succeed(options.models[slug]!)
      : Effect.fail(UpstreamError.unsupportedModel(options.provider, slug))
  const { callback, cancel } = calls
  return {
    specificationVersion: "v1",
    provider: options.provider,
    models: Object.keys(options.models),
    maxConcurrency: options.maxConcurrency,
    submit: (request) => Effect.flatMap(entryOf(request.model), (entry) => calls.submit(entry, request)),
    poll: (request) => Effect.flatMap(entryOf(request.model), (entry) => calls.poll(entry, request)),
    ...(cancel === undefined
      ? {}
      : {
          cancel: (request) => Effect.flatMap(entryOf(request.model), (entry) => cancel(entry, request))
        }),
    ...(callback === undefined
      ? {}
      : {
          callback: (request) => Effect.flatMap(entryOf(request.model), (entry) => callback(entry, request))
        })
  }
}
