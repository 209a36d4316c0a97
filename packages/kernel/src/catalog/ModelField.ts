/**
 * Field builders for model input schemas: each call returns the field's Effect Schema (validated,
 * and the source of its JSON Schema) and the `FieldInfo` GET /api/v1/models lists, so a field is
 * written once. Presence: a `default` is filled in when omitted (even if `required`); `required`
 * without a default must be sent; otherwise the key stays absent. Every rule's message says what
 * to fix, and `Catalog.validate` prefixes it with the field's path.
 */
import { Effect, Schema } from "effect"
import type { SchemaAST } from "effect"
import * as AddressPolicy from "../outbound/AddressPolicy.ts"
import * as MediaReference from "../media/MediaReference.ts"

const Bound = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** One input field as GET /api/v1/models lists it (and as the OpenAPI document describes it). */
export const FieldInfo = Schema.Struct({
  name: Schema.String,
  type: Schema.Literals(["string", "integer", "array"]),
  items: Schema.optionalKey(Schema.Literal("string").annotate({ description: "Item type of an array field." })),
  required: Schema.Boolean.annotate({
    description: "As the spec states it; a required field with a default may be omitted (the default is applied)."
  }),
  media: Schema.Boolean.annotate({
    description: "Takes an https URL or a media:<uuid> reference from POST /api/v1/media (per item for arrays)."
  }),
  options: Schema.optionalKey(Schema.Array(Schema.Union([Schema.String, Schema.Finite]))),
  default: Schema.optionalKey(Schema.Union([Schema.String, Schema.Finite])),
  minLength: Schema.optionalKey(Bound),
  maxLength: Schema.optionalKey(Bound),
  minimum: Schema.optionalKey(Schema.Finite),
  maximum: Schema.optionalKey(Schema.Finite),
  minItems: Schema.optionalKey(Bound),
  maxItems: Schema.optionalKey(Bound),
  allowedCounts: Schema.optionalKey(
    Schema.Array(Bound).annotate({
      description: "The only item counts accepted, when the model rules some out (e.g. 1 or 3, not 2)."
    })
  ),
  description: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "ModelField" })
export type FieldInfo = typeof FieldInfo.Type

/** A field's schema (as a Struct property, presence applied) and its listing without the name. */
export interface Field {
  readonly schema: Schema.Codec<unknown, unknown>
  readonly info: Omit<FieldInfo, "name">
}

export interface Presence<A> {
  readonly required?: boolean
  readonly default?: A
  readonly description?: string
}

export interface TextOptions extends Presence<string> {
  readonly minLength?: number
  readonly maxLength?: number
}

/**
 * Lengths count Unicode code points, as a person counts characters and as JSON Schema's
 * `minLength`/`maxLength` do, so the published schema states the exact bounds.
 */
const lengthRules = (minLength: number | undefined, maxLength: number | undefined) => {
  const message =
    minLength !== undefined && maxLength !== undefined
      ? `must be ${minLength} to ${maxLength} characters long`
      : maxLength !== undefined
        ? `must be at most ${maxLength} characters long`
        : `must be at least ${minLength} characters long`
  return [
    ...(minLength === undefined ? [] : [Schema.isMinCodePoints(minLength, { message })]),
    ...(maxLength === undefined ? [] : [Schema.isMaxCodePoints(maxLength, { message })])
  ]
}

/**
 * Applies the presence rule (see the module doc) and checks that a default is itself valid.
 * Annotations go on `base` before the checks: annotating a checked schema would attach them to
 * its last check, and the JSON Schema would carry them in the wrong place.
 */
const field = <T>(
  base: Schema.Codec<T, unknown>,
  checks: ReadonlyArray<SchemaAST.Check<T>>,
  options: Presence<Extract<T, string | number>>,
  info: Omit<FieldInfo, "name" | "required" | "default" | "description">
): Field => {
  const described = base.annotate({
    ...(options.description === undefined ? {} : { description: options.description }),
    ...(options.default === undefined ? {} : { default: options.default })
  })
  const schema = checks.reduce((checked, check) => checked.check(check), described)
  const fullInfo: Omit<FieldInfo, "name"> = {
    ...info,
    required: options.required === true,
    ...(options.default === undefined ? {} : { default: options.default }),
    ...(options.description === undefined ? {} : { description: options.description })
  }
  if (options.default !== undefined) {
    if (!Schema.is(schema)(options.default)) {
      throw new Error(`Default ${JSON.stringify(options.default)} violates its own field's rules`)
    }
    return { schema: schema.pipe(Schema.withDecodingDefaultKey(Effect.succeed(options.default))), info: fullInfo }
  }
  return { schema: options.required === true ? schema : Schema.optionalKey(schema), info: fullInfo }
}

const StringType = Schema.String.annotate({ message: "must be a string" })

/** A free-text string with optional length bounds. */
export const text = (options: TextOptions = {}): Field =>
  field(StringType, lengthRules(options.minLength, options.maxLength), options, {
    type: "string",
    media: false,
    ...(options.minLength === undefined ? {} : { minLength: options.minLength }),
    ...(options.maxLength === undefined ? {} : { maxLength: options.maxLength })
  })

/** The model's prompt: `text` described as such; required unless told otherwise. */
export const prompt = (options: TextOptions = {}): Field =>
  text({ description: "Text prompt describing the result to generate.", required: true, ...options })

/** One of a fixed set of string values. */
export const enumOf = <const O extends string>(options: ReadonlyArray<O>, presence: Presence<NoInfer<O>> = {}): Field => {
  const message = `must be one of ${options.map((o) => JSON.stringify(o)).join(", ")}`
  // A one-member Literals would publish as an `anyOf` of one schema; a Literal publishes as an enum.
  const literals = options.length === 1 ? Schema.Literal(options[0]!) : Schema.Literals(options)
  const base: Schema.Codec<string, unknown> = literals.annotate({ message })
  return field(base, [], presence, { type: "string", media: false, options })
}

export interface IntegerOptions extends Presence<number> {
  readonly minimum: number
  readonly maximum: number
}

/** An integer within inclusive bounds. */
export const integer = (options: IntegerOptions): Field => {
  const message = `must be an integer from ${options.minimum} to ${options.maximum}`
  const checks = [
    Schema.isInt({ message }),
    Schema.isBetween({ minimum: options.minimum, maximum: options.maximum }, { message })
  ]
  return field(Schema.Number.annotate({ message }), checks, options, {
    type: "integer",
    media: false,
    minimum: options.minimum,
    maximum: options.maximum
  })
}

const MEDIA_RULE = "must be an https URL or a media reference (media:<uuid>)"

/**
 * Written as `https://<host>...` with no whitespace. The prefix test comes first because URL
 * parsing forgives: it reads "HTTPS:/host" and "https:///host" as https://host/, and a
 * provider given the raw string might not.
 */
const HTTPS_PREFIX = /^https:\/\/[^/\\?#\s]/
const isHttpsUrl = (value: string): boolean =>
  HTTPS_PREFIX.test(value) && !/\s/.test(value) && URL.canParse(value) && new URL(value).hostname !== ""

/**
 * A media input: an https URL or a `media:<uuid>` upload reference, nothing else (no http:,
 * data:, file:, javascript:). The JSON Schema carries a looser `pattern` for clients; the
 * decoder is the authority.
 */
const isMediaInput = Schema.makeFilter((value: string) => isHttpsUrl(value) || MediaReference.isMediaReference(value), {
  message: MEDIA_RULE,
  toJsonSchema: () => [{ pattern: "^(https://[^/\\\\?#\\s]\\S*|media:[0-9a-f-]{36})$", format: "uri" }, true]
})

/**
 * An https media URL must not point inside: no credentials, no `localhost` or other local name,
 * no loopback, private, link-local or metadata address in any notation the URL parser reads
 * (`AddressPolicy.urlProblem`, syntactic: no DNS at admission). Other strings pass here and
 * meet `isMediaInput`.
 */
const isOutsideUrl = Schema.makeFilter((value: string) => {
  if (!isHttpsUrl(value)) return undefined
  const problem = AddressPolicy.urlProblem(value)
  return problem === undefined ? undefined : `must be an https URL of a public host: this one ${problem}`
})

/** A single media input field (`imageUrl`, `videoUrl`, `firstFrameUrl`, ...). */
export const mediaUrl = (options: Omit<Presence<string>, "default"> = {}): Field =>
  field(StringType, [isMediaInput, isOutsideUrl], options, { type: "string", media: true })

export interface MediaUrlsOptions extends Omit<Presence<never>, "default"> {
  readonly maxItems: number
  /** Restricts the item count further, e.g. `[1, 3]` where 2 images are not supported. */
  readonly allowedCounts?: ReadonlyArray<number>
}

/**
 * A list of media inputs (`imageUrls`). A required list needs at least one item; an optional
 * list may be empty unless `allowedCounts` says otherwise.
 */
export const mediaUrls = (options: MediaUrlsOptions): Field => {
  const minItems = options.required === true ? 1 : 0
  const counts = options.allowedCounts
  const size =
    minItems > 0
      ? Schema.isBetweenLength(minItems, options.maxItems, { message: `must hold ${minItems} to ${options.maxItems} items` })
      : Schema.isMaxLength(options.maxItems, { message: `must hold at most ${options.maxItems} items` })
  const count =
    counts === undefined
      ? []
      : [
          Schema.makeFilter((items: ReadonlyArray<string>) => counts.includes(items.length), {
            message: `must hold ${counts.join(" or ")} items (other counts are not supported)`,
            toJsonSchema: () => ({ anyOf: counts.map((n) => ({ minItems: n, maxItems: n })) })
          })
        ]
  const base = Schema.Array(StringType.check(isMediaInput, isOutsideUrl)).annotate({ message: "must be an array of strings" })
  return field(base, [size, ...count], options, {
    type: "array",
    items: "string",
    media: true,
    ...(minItems > 0 ? { minItems } : {}),
    maxItems: options.maxItems,
    ...(counts === undefined ? {} : { allowedCounts: counts })
  })
}
