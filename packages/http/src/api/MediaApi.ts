/**
 * Media upload: the raw bytes of an image or video, referenced afterwards as `media:<uuid>` in
 * any media input field of POST /api/v1/jobs (by the uploading account only).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Errors, MediaReference } from "@taskmeter/kernel"
import { Authentication, requireScope } from "./Security.ts"

/** The upload types accepted; each is checked against the file's leading bytes. */
export const uploadContentTypes = [
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "video/mp4",
  "video/quicktime",
  "video/webm"
] as const
export type UploadContentType = (typeof uploadContentTypes)[number]

export const UploadedMedia = Schema.Struct({
  reference: MediaReference.MediaReference.annotate({
    description: "media:<uuid>; send it in place of an https URL in a media input field."
  }),
  contentType: Schema.Literals(uploadContentTypes),
  sizeBytes: Schema.Int,
  sha256: Schema.String.annotate({ description: "Lower-case hex SHA-256 of the bytes." }),
  createdAt: Schema.String.annotate({ format: "date-time" }),
  expiresAt: Schema.String.annotate({
    format: "date-time",
    description:
      "When the upload expires under the account's retention: its file is removed, and a task naming it is refused with 400 MEDIA_EXPIRED."
  })
}).annotate({ identifier: "UploadedMedia" })
export type UploadedMedia = typeof UploadedMedia.Type

export const MediaApi = HttpApiGroup.make("media")
  .add(
    HttpApiEndpoint.post("upload", "/api/v1/media", {
      payload: HttpApiSchema.StreamUint8Array({ contentType: uploadContentTypes }),
      success: UploadedMedia.pipe(HttpApiSchema.status(201)),
      error: [Errors.InvalidRequest, Errors.InputTooLarge, Errors.ApiUnavailable]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Upload an image or video",
          description:
            "The body is the raw file; Content-Type must be one of " +
            uploadContentTypes.join(", ") +
            " and must match the file's leading bytes. The size limit is set by the operator (MAX_UPLOAD_BYTES, 100 MiB by default); " +
            "a larger body is 413 INPUT_TOO_LARGE."
        })
      )
      .annotateMerge(requireScope("jobs:create"))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Description, "Upload media to reference in task inputs.")
