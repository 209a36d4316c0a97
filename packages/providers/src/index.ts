/**
 * Provider adapters: one per model family over shared HTTP helpers (a base adapter per
 * upstream protocol), the offline `simulated` provider, and `Providers.fromConfig` to pick
 * them from configuration. The conformance suite for adapters is `@taskmeter/providers/testing`.
 */
export * as Alpha from "./alpha/Alpha.ts"
export * as ChatUpstreams from "./chat/ChatUpstreams.ts"
export * as Delta from "./delta/Delta.ts"
export * as Epsilon from "./epsilon/Epsilon.ts"
export * as FalQueue from "./fal/FalQueue.ts"
export * as Gamma from "./gamma/Gamma.ts"
export * as HttpClient from "./utils/HttpClient.ts"
export * as InputFields from "./utils/InputFields.ts"
export * as JobHandle from "./utils/JobHandle.ts"
export * as JsonBody from "./utils/JsonBody.ts"
export * as LocalChatModel from "./chat/LocalChatModel.ts"
export * as OpenAiCompatible from "./chat/OpenAiCompatible.ts"
export * as Outputs from "./utils/Outputs.ts"
export * as Picgen from "./picgen/Picgen.ts"
export * as ProviderConfig from "./utils/ProviderConfig.ts"
export * as Providers from "./Providers.ts"
export * as Replicate from "./replicate/Replicate.ts"
export * as Simulated from "./simulated/Simulated.ts"
export * as SimulatedJournal from "./simulated/Journal.ts"
export * as Song from "./song/Song.ts"
export * as SongApi from "./song/SongApi.ts"
export * as TableAdapter from "./utils/TableAdapter.ts"
export * as TaskMarket from "./market/TaskMarket.ts"
export * as UpstreamError from "./utils/UpstreamError.ts"
