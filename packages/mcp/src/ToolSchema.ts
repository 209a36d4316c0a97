/**
 * Tool schemas for the MCP SDK from Effect Schemas, so each tool's arguments and results are
 * described once. The Standard Schema given to the SDK renders its JSON Schema once (input schemas
 * closed, `additionalProperties: false`); an input schema's `validate` accepts anything, since the
 * tool decodes its arguments itself and answers INVALID_REQUEST as `{ code, error }`, while output
 * schemas validate for real.
 */
import type { StandardSchemaWithJSON } from "@modelcontextprotocol/server"
import { Effect, JsonSchema, Result, Schema, SchemaIssue } from "effect"
import { Errors, ProblemList } from "@taskmeter/kernel"

type JsonObject = Record<string, unknown>

const documentOf = (schema: Schema.Top, closed: boolean): JsonObject => {
  const document = Schema.toJsonSchemaDocument(schema, closed ? { onExcessProperty: "error" } : undefined)
  const definitions = Object.keys(document.definitions).length > 0 ? { $defs: document.definitions } : {}
  return { $schema: JsonSchema.META_SCHEMA_URI_DRAFT_2020_12, ...document.schema, ...definitions }
}

const withJson = <I, O>(
  json: JsonObject,
  validate: StandardSchemaWithJSON<I, O>["~standard"]["validate"]
): StandardSchemaWithJSON<I, O> => ({
  "~standard": {
    version: 1,
    vendor: "taskmeter",
    validate,
    jsonSchema: { input: () => json, output: () => json }
  }
})

/** The advertised schema of a tool's arguments; decode them with `decodeArguments`. */
export const input = <S extends Schema.Top>(schema: S): StandardSchemaWithJSON<unknown, unknown> =>
  withJson(documentOf(schema, true), (value) => ({ value }))

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (leaf) =>
    leaf._tag === "MissingKey"
      ? "is required"
      : leaf._tag === "UnexpectedKey"
        ? "is not an argument of this tool"
        : SchemaIssue.defaultLeafHook(leaf)
})

const describe = (issue: SchemaIssue.Issue) =>
  ProblemList.join(
    formatIssues(issue).issues.map(
      ({ message, path = [] }) =>
        `${path.map((s) => String(typeof s === "object" ? s.key : s)).join(".") || "arguments"}: ${message}`
    )
  )

/** Decodes a tool's arguments, refusing unknown keys; INVALID_REQUEST names each problem. */
export const decodeArguments = <S extends Schema.Decoder<unknown>>(schema: S, args: unknown) =>
  Effect.fromResult(
    Result.mapError(
      Schema.decodeUnknownResult(schema)(args ?? {}, { errors: "all", onExcessProperty: "error" }),
      (error) => new Errors.InvalidRequest({ message: describe(error.issue) })
    )
  )

/** The schema of a tool's structured result, validated by the SDK before the result is sent. */
export const output = <S extends Schema.Decoder<unknown>>(schema: S): StandardSchemaWithJSON<unknown, S["Type"]> => {
  const decode = Schema.decodeUnknownResult(schema)
  return withJson(documentOf(schema, false), (value) => {
    const decoded = decode(value, { errors: "all" })
    return Result.isSuccess(decoded) ? { value: decoded.success } : { issues: [{ message: describe(decoded.failure.issue) }] }
  })
}
