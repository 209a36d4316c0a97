/** What the generated cases are made from: read from the running server before the cases are built. */
export interface ModelField {
  readonly name: string
  readonly type: "string" | "integer" | "array"
  readonly items?: "string"
  readonly required: boolean
  readonly media: boolean
  readonly options?: ReadonlyArray<string | number>
  readonly default?: string | number
  readonly minLength?: number
  readonly maxLength?: number
  readonly minimum?: number
  readonly maximum?: number
  readonly minItems?: number
  readonly maxItems?: number
  readonly allowedCounts?: ReadonlyArray<number>
}

export interface Model {
  readonly slug: string
  readonly category: string
  readonly fields: ReadonlyArray<ModelField>
}

export interface CorpusContext {
  /** GET /api/v1/models, as the server lists them. */
  readonly models: ReadonlyArray<Model>
  /** An id of GET /api/v1/chat/models. */
  readonly chatModel: string
  /** A public OAuth client registered with REDIRECT_URI. */
  readonly clientId: string
  /** A task of the other customer (not the caller's). */
  readonly otherJobId: string
}

export const REDIRECT_URI = "http://127.0.0.1:8976/callback"

const PROMPT = "a lighthouse at dusk, painted in oils"
const IMAGE = "https://images.example.com/a.png"
const VIDEO = "https://videos.example.com/a.mp4"

/** A value the field accepts. */
export const validValueOf = (field: ModelField): unknown => {
  if (field.type === "array") {
    const count = field.allowedCounts?.[0] ?? Math.max(field.minItems ?? 1, 1)
    return Array.from({ length: count }, () => IMAGE)
  }
  if (field.default !== undefined) return field.default
  if (field.options !== undefined) return field.options[0]
  if (field.type === "integer") return field.minimum ?? 1
  if (field.media) return field.name.toLowerCase().includes("video") ? VIDEO : IMAGE
  const max = field.maxLength ?? PROMPT.length
  return PROMPT.slice(0, Math.max(Math.min(max, PROMPT.length), field.minLength ?? 1))
}

/** An input the model accepts: every field with a valid value (optional ones too, so each is exercised). */
export const validInputOf = (model: Model): Record<string, unknown> =>
  Object.fromEntries(model.fields.map((field) => [field.name, validValueOf(field)]))

/** A model of each kind the generated cases need. */
export const firstModel = (context: CorpusContext, test: (model: Model) => boolean): Model => {
  const found = context.models.find(test)
  if (found === undefined) throw new Error("no model of the kind the corpus needs")
  return found
}
