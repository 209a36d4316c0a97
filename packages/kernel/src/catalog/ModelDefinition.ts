/**
 * A model of the catalog: its slug, category and input fields. `define` assembles one from
 * `ModelField` builders and derives everything else from those fields: the Effect Schema that
 * validates an input (and fills in defaults), the JSON Schema (draft 2020-12, inline, closed
 * with `additionalProperties: false`) for OpenAPI 3.1 and MCP, and the `fields` listing.
 */
import { JsonSchema, Schema } from "effect"
import type { Field, FieldInfo } from "./ModelField.ts"

export const Category = Schema.Literals(["image", "video", "audio", "text"])
export type Category = typeof Category.Type

/** A validated input with defaults applied, keyed by field name. */
export type ModelInput = { readonly [field: string]: unknown }

export interface ModelDefinition {
  readonly slug: string
  readonly category: Category
  /** False for every model of the spec; kept so that a future retirement has a place to go. */
  readonly deprecated: boolean
  readonly title: string
  readonly description: string
  /** What a task produces, for people, e.g. "2 audio assets". */
  readonly outputs: string
  readonly fields: ReadonlyArray<FieldInfo>
  /** Decodes a submitted input into a `ModelInput`; rejects unknown keys when decoded with `onExcessProperty: "error"`. */
  readonly inputSchema: Schema.Codec<ModelInput, ModelInput>
  /** JSON Schema draft 2020-12 of the submitted input (defaulted fields are not `required`). */
  readonly jsonSchema: { readonly [k: string]: unknown }
}

export interface ModelSpec {
  readonly slug: string
  readonly category: Category
  readonly title: string
  readonly description: string
  readonly outputs: string
  readonly fields: { readonly [name: string]: Field }
}

export const define = (spec: ModelSpec): ModelDefinition => {
  const entries = Object.entries(spec.fields)
  const inputSchema: Schema.Codec<ModelInput, ModelInput> = Schema.Struct(
    Object.fromEntries(entries.map(([name, field]) => [name, field.schema]))
  ).annotate({ title: spec.title, description: spec.description })
  const document = Schema.toJsonSchemaDocument(inputSchema, { onExcessProperty: "error" })
  return {
    slug: spec.slug,
    category: spec.category,
    deprecated: false,
    title: spec.title,
    description: spec.description,
    outputs: spec.outputs,
    fields: entries.map(([name, field]) => ({ name, ...field.info })),
    inputSchema,
    jsonSchema: { $schema: JsonSchema.META_SCHEMA_URI_DRAFT_2020_12, ...document.schema }
  }
}
