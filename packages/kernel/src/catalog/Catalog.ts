/**
 * The model catalog: the 33 models of the spec with their input schemas, and validation of a
 * submitted `input` against its model. Each model's fields are written once with the
 * `ModelField` builders; validation, the JSON Schema (OpenAPI 3.1, MCP) and the `fields`
 * listing of GET /api/v1/models are all derived from them (see `ModelDefinition.define`).
 *
 * Rules where the spec leaves a choice open:
 * - A field with a default is filled in when omitted, also when the spec marks it required:
 *   defaults exist to be applied, and prices are computed on the defaulted input. A required
 *   field without a default must be present. An optional field without a default stays absent.
 *   `FieldInfo.required` repeats the spec's flag; the JSON Schema's `required` lists only the
 *   fields a caller must send (required and no default).
 * - Length bounds are exactly the spec's: a prompt whose bounds the spec does not give accepts
 *   any string, the empty one included, rather than a limit the spec does not state.
 * - A default that would break its own field's rule is not applied (picgen 2.5: prompt
 *   "1-20000, default empty string"), so that prompt must be sent.
 * - A required `imageUrls` needs at least one item; an optional one may be empty unless the
 *   model allows only certain counts (delta Omni Flash: 1 or 3).
 * - Lengths count characters as Unicode code points (as JSON Schema does), not UTF-16 units.
 * - Media fields take a URL written `https://<host>...` (no whitespace, parsed with URL) or a
 *   `media:<uuid>` reference, nothing else.
 * - An aspect ratio or duration the spec leaves without options where its siblings have them
 *   takes the siblings' set (epsilon 3.1 Fast image-to-video: 16:9 or 9:16).
 * - alpha-pro-edit's aspectRatio default (3:4) is applied like any other, although the spec
 *   notes that the upstream adapts the size when the field is absent: one rule for all defaults
 *   keeps the listing, the quote and the submitted input in agreement.
 * - "Has a default prompt text" (delta Omni Flash from text or image) is a written prompt,
 *   applied when the prompt is omitted.
 * - Validation reports the issues it finds, each as `input.<field>: <rule>`, joined by "; ", the
 *   first 20 of them and then "and N more" (ProblemList). A string the store cannot hold (NUL,
 *   an unpaired surrogate; StorableText), in a key or a value, is refused before anything else.
 *
 * @example
 * ```ts
 * const { input } = yield* catalog.validate("alpha-pro-text-to-image-economy", { prompt: "a fox" })
 * // input: { prompt: "a fox", aspectRatio: "9:16", resolution: "1k" }
 * ```
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

export class Catalog extends Context.Service<Catalog, {
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
  readonly mediaReferences: (
    model: ModelDefinition,
    input: ModelInput
  ) => ReadonlyArray<MediaReference.MediaReference>
}>()("@taskmeter/kernel/Catalog") {}

const parseOptions = { errors: "all", onExcessProperty: "error" } as const

const describeIssue = (model: ModelDefinition, issue: SchemaIssue.Issue): string => {
  const fieldNames = model.fields.map((field) => field.name).join(", ")
  const formatter = SchemaIssue.makeFormatterStandardSchemaV1({
    leafHook: (leaf) =>
      leaf._tag === "MissingKey"
        ? "is required"
        : leaf._tag === "UnexpectedKey"
        ? `is not a field of ${model.slug} (its fields: ${fieldNames})`
        : SchemaIssue.defaultLeafHook(leaf)
  })
  const lines = formatter(issue).issues.map((entry) =>
    `${
      StorableText.formatPath("input", (entry.path ?? []).map((segment) => typeof segment === "object" ? segment.key : segment))
    }: ${entry.message}`
  )
  return ProblemList.join(lines)
}

const isRecord = (input: unknown): input is { readonly [key: string]: unknown } =>
  typeof input === "object" && input !== null && !Array.isArray(input)

const words = (text: string) => text.toLowerCase().split(/\s+/).filter((word) => word.length > 0)

/** A catalog over the given models; throws on a repeated slug, a defect of the model list. */
export const make = (models: ReadonlyArray<ModelDefinition>): Catalog["Service"] => {
  const bySlug = new Map(models.map((model) => [model.slug, model]))
  if (bySlug.size !== models.length) throw new Error("Catalog: two models share a slug")

  const get = (slug: string) => {
    const model = bySlug.get(slug)
    return model === undefined
      ? Effect.fail(
        new Errors.ModelNotFound({
          message: `No model has the slug ${JSON.stringify(slug)}; use the slug of a listed model.`
        })
      )
      : Effect.succeed(model)
  }

  const validate = (slug: string, input: unknown) =>
    Effect.flatMap(get(slug), (model) => {
      if (!isRecord(input)) {
        return Effect.fail(new Errors.InvalidModelInput({ message: "input: must be a JSON object of the model's fields" }))
      }
      const unstorable = StorableText.findUnstorable(input, "input")
      if (unstorable !== undefined) {
        return Effect.fail(new Errors.InvalidModelInput({ message: StorableText.describe(unstorable) }))
      }
      const decoded = Schema.decodeUnknownResult(model.inputSchema)(input, parseOptions)
      return Result.isSuccess(decoded)
        ? Effect.succeed({ model, input: decoded.success })
        : Effect.fail(new Errors.InvalidModelInput({ message: describeIssue(model, decoded.failure.issue) }))
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
