export * as MemoryStore from "./MemoryStore.ts"
