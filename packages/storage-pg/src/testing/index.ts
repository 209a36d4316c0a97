export * as SchemaReset from "./SchemaReset.ts"
