export * as SessionSchema from "./SessionSchema.ts"
