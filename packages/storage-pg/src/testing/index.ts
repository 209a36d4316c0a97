export * as SchemaReset from "./SchemaReset.ts"
export * as SessionSchema from "./SessionSchema.ts"
