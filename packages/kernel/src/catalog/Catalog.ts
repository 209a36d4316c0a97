/**
 * The model catalog: the spec's 33 models with their input schemas (written once with the
 * `ModelField` builders, see `ModelDefinition.define`), and `validate`, which checks a submitted
 * `input` against its model and applies its defaults. Validation, the JSON Schema and the
 * `fields` listing derive from the same definitions. Choices the spec leaves open:
 * docs/decisions.md, Catalog and inputs.
 */
import { Context, Effect, Layer, Result, Schema, SchemaIssue } from "effect"
import * as Errors from "../domain/Errors.ts"
import * as MediaReference from "../media/MediaReference.ts"
import * as ProblemList from "../domain/ProblemList.ts"
import * as StorableText from "../domain/StorableText.ts"
import type { Category, ModelDefinition, ModelInput } from "./ModelDefinition.ts"
import { models as shippedModels } from "./models/index.ts"

export type { Category, ModelDefinition, ModelInput } from "./ModelDefinition.ts"
export type { FieldInfo } from "./ModelField.ts"

export class Catalog extends Context.Service<
  Catalog,
  {
    /** Every model, in listing order. */
    readonly models: ReadonlyArray<ModelDefinition>
    readonly get: (slug: string) => Effect.Effect<ModelDefinition, Errors.ModelNotFound>
    /** The input with defaults applied, or every rule it breaks. */
    readonly validate: (
      slug: string,
      input: unknown
    ) => Effect.Effect<
      { readonly model: ModelDefinition; readonly input: ModelInput },
      Errors.ModelNotFound | Errors.InvalidModelInput
    >
    /**
     * Models whose slug, title or description contain every word of `query` (case-insensitive),
     * those with more words in their slug or title first, otherwise in listing order; an empty
     * query matches all. For the MCP `search_models` tool.
     */
    readonly search: (query: string, category?: Category) => ReadonlyArray<ModelDefinition>
    /** The distinct `media:` references of a validated input, so admission can check their owner. */
    readonly mediaReferences: (model: ModelDefinition, input: ModelInput) => ReadonlyArray<MediaReference.MediaReference>
  }
>()("@taskmeter/kernel/Catalog") {}

const parseOptions = { errors: "all", onExcessProperty: "error" } as const

const describeIssue = (model: ModelDefinition, issue: SchemaIssue.Issue): ReadonlyArray<string> => {
  const fieldNames = model.fields.map((field) => field.name).join(", ")
  const formatter = SchemaIssue.makeFormatterStandardSchemaV1({
    leafHook: (leaf) =>
      leaf._tag === "MissingKey"
        ? "is required"
        : leaf._tag === "UnexpectedKey"
          ? `is not a field of ${model.slug} (its fields: ${fieldNames})`
          : SchemaIssue.defaultLeafHook(leaf)
  })
  return formatter(issue).issues.map(
    (entry) =>
      `${StorableText.formatPath(
        "input",
        (entry.path ?? []).map((segment) => (typeof segment === "object" ? segment.key : segment))
      )}: ${entry.message}`
  )
}

/** INVALID_MODEL_INPUT for the model, its message and `problems` bounded alike. */
const invalidInput = (model: string, problems: ReadonlyArray<string>) =>
  new Errors.InvalidModelInput({ message: ProblemList.join(problems), model, problems: ProblemList.listed(problems) })

const isRecord = (input: unknown): input is { readonly [key: string]: unknown } =>
  typeof input === "object" && input !== null && !Array.isArray(input)

const words = (text: string) =>
  text
    .toLowerCase()
    .split(/\s+/)
    .filter((word) => word.length > 0)

/** A catalog over the given models; throws on a repeated slug, a defect of the model list. */
export const make = (models: ReadonlyArray<ModelDefinition>): Catalog["Service"] => {
  const bySlug = new Map(models.map((model) => [model.slug, model]))
  if (bySlug.size !== models.length) throw new Error("Catalog: two models share a slug")

  const get = (slug: string) => {
    const model = bySlug.get(slug)
    return model === undefined
      ? Effect.fail(
          new Errors.ModelNotFound({
            message: `No model has the slug ${JSON.stringify(slug)}; use the slug of a listed model.`,
            model: slug
          })
        )
      : Effect.succeed(model)
  }

  const validate = (slug: string, input: unknown) =>
    Effect.flatMap(get(slug), (model) => {
      if (!isRecord(input)) {
        return Effect.fail(invalidInput(model.slug, ["input: must be a JSON object of the model's fields"]))
      }
      const unstorable = StorableText.findUnstorable(input, "input")
      if (unstorable !== undefined) {
        return Effect.fail(invalidInput(model.slug, [StorableText.describe(unstorable)]))
      }
      const decoded = Schema.decodeUnknownResult(model.inputSchema)(input, parseOptions)
      return Result.isSuccess(decoded)
        ? Effect.succeed({ model, input: decoded.success })
        : Effect.fail(invalidInput(model.slug, describeIssue(model, decoded.failure.issue)))
    })

  const search = (query: string, category?: Category) => {
    const wanted = words(query)
    const nameHits = (model: ModelDefinition) => {
      const name = `${model.slug} ${model.title}`.toLowerCase()
      return wanted.filter((word) => name.includes(word)).length
    }
    return models
      .filter((model) => {
        if (category !== undefined && model.category !== category) return false
        const haystack = `${model.slug} ${model.title} ${model.description}`.toLowerCase()
        return wanted.every((word) => haystack.includes(word))
      })
      .sort((a, b) => nameHits(b) - nameHits(a))
  }

  const mediaReferences = (model: ModelDefinition, input: ModelInput) => {
    const found = new Set<MediaReference.MediaReference>()
    for (const field of model.fields) {
      if (!field.media) continue
      const value = input[field.name]
      for (const item of Array.isArray(value) ? value : [value]) {
        if (typeof item === "string" && MediaReference.isMediaReference(item)) found.add(item)
      }
    }
    return [...found]
  }

  return Catalog.of({ models, get, validate, search, mediaReferences })
}

/** The catalog of the 33 models the spec lists. */
export const layer: Layer.Layer<Catalog> = Layer.succeed(Catalog, make(shippedModels))
