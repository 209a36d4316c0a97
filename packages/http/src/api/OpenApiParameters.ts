/**
 * The generator documents header and query parameters by their encoded type only (a string),
 * without their checks. This puts the JSON Schema of the decoded value back, derived from the
 * schema the server decodes with, so a documented limit is the limit enforced.
 */
import { Schema } from "effect"

type Operation = Record<string, any>

const jsonSchemaOf = (schema: Schema.Top): Record<string, unknown> => {
  const { $schema: _, ...rest } = Schema.toJsonSchemaDocument(Schema.toType(schema)).schema as Record<string, unknown>
  return rest
}

/** An operation transform giving each named parameter the JSON Schema of `schemas[name]`. */
export const parameterSchemas = (
  schemas: { readonly [name: string]: Schema.Top },
  extra: { readonly [name: string]: Record<string, unknown> } = {}
) => {
  const derived = Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, jsonSchemaOf(schema)]))
  return (operation: Operation): Operation => ({
    ...operation,
    parameters: (operation.parameters ?? []).map((parameter: Operation) =>
      derived[parameter.name] === undefined
        ? parameter
        : {
            ...parameter,
            schema: { ...parameter.schema, ...derived[parameter.name], ...extra[parameter.name] }
          }
    )
  })
}
