/**
 * Tool schemas for the MCP SDK from Effect Schemas, so that each tool's arguments and results
 * are described once, by the kernel's schemas and the tool's own Struct of them.
 *
 * The SDK takes a Standard Schema with JSON Schema conversion (`~standard.validate` and
 * `~standard.jsonSchema`). Effect Schema provides both, with two adjustments made here:
 * - the JSON Schema is rendered once and kept, and input schemas are closed
 *   (`additionalProperties: false`), as the arguments are decoded with unknown keys refused;
 * - an input schema's `validate` accepts any value: the SDK would turn a refusal into a bare
 *   text error, while the tool decodes the arguments itself and answers INVALID_REQUEST as
 *   `{ code, error }`, like every other refusal of the service. Output schemas validate for
 *   real, so a result that breaks its own schema is caught before it leaves.
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
  ProblemList.join(formatIssues(issue).issues
    .map(({ message, path = [] }) => `${path.map((s) => String(typeof s === "object" ? s.key : s)).join(".") || "arguments"}: ${message}`))

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
    return Result.isSuccess(decoded)
      ? { value: decoded.success }
      : { issues: [{ message: describe(decoded.failure.issue) }] }
  })
}
