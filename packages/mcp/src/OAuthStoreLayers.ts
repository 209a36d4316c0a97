/**
 * `@taskmeter/mcp`'s `OAuthStore`: the port (`./OAuthStore.ts`) with its in-memory layer. The
 * layer lives here, not in the port, so that the memory store can import the port it implements.
 */
import { Layer } from "effect"
import { makeMemoryStore } from "./internal/MemoryOAuthStore.ts"
import { OAuthStore } from "./OAuthStore.ts"

export * from "./OAuthStore.ts"

/** An OAuthStore in this process's memory: right for tests and a single-process deployment; lost on restart. */
export const layerMemory: Layer.Layer<OAuthStore> = Layer.sync(OAuthStore, () => OAuthStore.of(makeMemoryStore()))
