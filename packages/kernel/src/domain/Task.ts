/**
 * The Task (Job) and Asset shapes of the spec, as callers see them.
 *
 * Asset `type` values (the spec leaves them open) are the four categories of output, each
 * with the MIME types a client can expect, so a client picks a file extension from `type`
 * and the download's Content-Type agrees.
 */
import { Schema } from "effect"
import { Micros } from "./Money.ts"
import { TaskStatus } from "./TaskStatus.ts"

export const AssetType = Schema.Literals(["image", "video", "audio", "text"])
export type AssetType = typeof AssetType.Type

/** The MIME types each asset type is delivered as, the first one being the usual. */
export const mimeTypesOf: { readonly [T in AssetType]: ReadonlyArray<string> } = {
  image: ["image/png", "image/jpeg", "image/webp"],
  video: ["video/mp4", "video/webm"],
  audio: ["audio/mpeg", "audio/wav"],
  text: ["text/plain; charset=utf-8"]
}

const DateTimeString = Schema.String.annotate({ format: "date-time", description: "ISO 8601 date-time, UTC." })

export const Asset = Schema.Struct({
  id: Schema.String,
  type: AssetType,
  url: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "Same-origin download link, /api/v1/results/<result_uuid>; absent for text results and once the result expired (dataRemoved)."
    })
  ),
  text: Schema.optionalKey(
    Schema.String.annotate({ description: "The text of a text result, such as lyrics; it has no file (no url)." })
  )
}).annotate({ identifier: "Asset" })
export type Asset = typeof Asset.Type

const taskFields = {
  id: Schema.String,
  model: Schema.String,
  status: TaskStatus,
  errorCode: Schema.NullOr(Schema.String).annotate({
    description: "Set when the task fails or needs review (e.g. CANCELED, UPSTREAM_REJECTED_INPUT); null otherwise."
  }),
  priceMicros: Micros,
  currency: Schema.Literal("USD"),
  createdAt: DateTimeString,
  updatedAt: DateTimeString,
  assets: Schema.Array(Asset),
  provider: Schema.NullOr(Schema.String).annotate({
    description:
      'The provider that runs the task, e.g. "simulated" (generated offline, not by the model); null while it is queued.'
  }),
  expiresAt: Schema.optionalKey(
    DateTimeString.annotate({
      description:
        "When the task's result files expire (the earliest of them) under the account's retention; absent when it has none, or after."
    })
  ),
  progress: Schema.optionalKey(
    Schema.Int.check(Schema.isGreaterThanOrEqualTo(0), Schema.isLessThanOrEqualTo(100)).annotate({
      description:
        "While the task is running: how far the upstream says it is, a whole percent 0-100; absent when it has not said, and once the task is not running."
    })
  ),
  dataRemoved: Schema.optionalKey(
    Schema.Literal(true).annotate({
      description: "Present once the result files expired: they were removed (or are being) and the assets have no url."
    })
  )
}

/** A task as GET /api/v1/jobs/{id} returns it. */
export const Task = Schema.Struct(taskFields).annotate({ identifier: "Task" })
export type Task = typeof Task.Type

/** A task as POST /api/v1/jobs returns it: `replayed` says whether the Idempotency-Key matched an earlier submission. */
export const SubmittedTask = Schema.Struct({ ...taskFields, replayed: Schema.Boolean }).annotate({
  identifier: "SubmittedTask"
})
export type SubmittedTask = typeof SubmittedTask.Type
