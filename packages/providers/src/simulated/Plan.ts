/**
 * The simulated provider's job, written into its `upstreamId`: everything needed to answer a
 * poll (what to render, from which seed, when it is ready, whether it fails), so polling works
 * from any process, also after a restart, without shared state. It holds a few numbers and
 * at most a title, style tags and a topic, trimmed, never the caller's whole input.
 */
import { Result, Schema } from "effect"
import { ModelDefinition } from "@taskmeter/kernel"
import type { Catalog } from "@taskmeter/kernel"
import * as Lyrics from "./Lyrics.ts"

export const Plan = Schema.Struct({
  model: Schema.String,
  kind: ModelDefinition.Category,
  seed: Schema.String,
  /** Submitted and ready, epoch milliseconds. */
  at: Schema.Number,
  ready: Schema.Number,
  fail: Schema.Boolean,
  /** Aspect ratio ("16:9" or "1280x720"), images and videos. */
  ratio: Schema.optional(Schema.String),
  /** Images to draw. */
  count: Schema.optional(Schema.Number),
  /** Video length. */
  seconds: Schema.optional(Schema.Number),
  title: Schema.optional(Schema.String),
  tags: Schema.optional(Schema.String),
  instrumental: Schema.optional(Schema.Boolean),
  topic: Schema.optional(Schema.String)
})
export type Plan = typeof Plan.Type

const PREFIX = "sim1."
const PlanJson = Schema.fromJsonString(Plan)

const text = (input: Catalog.ModelInput, field: string): string | undefined => {
  const value = input[field]
  return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined
}

const number = (input: Catalog.ModelInput, field: string): number | undefined => {
  const value = Number(input[field])
  return Number.isFinite(value) && value > 0 ? value : undefined
}

/** What to render for a validated input. */
export const make = (
  model: Catalog.ModelDefinition,
  input: Catalog.ModelInput,
  job: { readonly seed: string; readonly at: number; readonly ready: number; readonly fail: boolean }
): Plan => {
  const base = { model: model.slug, kind: model.category, ...job }
  const topic = text(input, "prompt") ?? text(input, "description") ?? ""
  switch (model.category) {
    case "image":
      return { ...base, ratio: text(input, "aspectRatio") ?? "1:1", count: number(input, "numImages") ?? 1 }
    case "video":
      return { ...base, ratio: text(input, "aspectRatio") ?? "16:9", seconds: number(input, "duration") ?? 8 }
    case "audio": {
      const instrumental = input["make_instrumental"] === "true"
      return {
        ...base,
        title: text(input, "title")?.slice(0, 80) ?? Lyrics.title(job.seed, topic),
        tags: text(input, "tags")?.slice(0, 200) ?? Lyrics.tags(job.seed, instrumental),
        instrumental
      }
    }
    case "text":
      return { ...base, topic: topic.slice(0, 200) }
  }
}

export const encode = (plan: Plan): string => PREFIX + Buffer.from(Schema.encodeSync(PlanJson)(plan)).toString("base64url")

/** The plan of an upstream id this provider issued; undefined for any other string. */
export const decode = (upstreamId: string): Plan | undefined => {
  if (!upstreamId.startsWith(PREFIX)) return undefined
  const json = Buffer.from(upstreamId.slice(PREFIX.length), "base64url").toString("utf8")
  const decoded = Schema.decodeUnknownResult(PlanJson)(json)
  return Result.isSuccess(decoded) ? decoded.success : undefined
}
