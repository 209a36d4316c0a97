export * as PgStore from "./PgStore.ts"
