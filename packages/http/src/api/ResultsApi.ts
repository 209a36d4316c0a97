/**
 * Result downloads: the bytes of a result file of a succeeded task, at the `assets[].url` the
 * task gives (`/api/v1/results/<uuid>`), with the same credentials as the rest of the API.
 *
 * Served with Content-Type, Content-Length, an ETag (the SHA-256 of the bytes), single-range
 * HTTP Range requests (206, or 416 when the range is outside the file) and If-None-Match (304).
 * A result of another account, like an unknown id, is 404 JOB_NOT_FOUND: the spec's code for
 * "no task with this id belongs to the account", which is what the caller has to learn; so is a
 * text asset's id, whose content is inline in the task (the message says so).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Errors, Task } from "@taskmeter/kernel"
import { Authentication, requireScope } from "./Security.ts"

const resultContentTypes = [...new Set(Object.values(Task.mimeTypesOf).flat())] as [string, ...Array<string>]

const header = (description: string, schema: Record<string, unknown> = { type: "string" }) => ({
  description,
  schema
})

const bodyHeaders = {
  "content-length": header("Length of this response's body in bytes.", { type: "integer" }),
  etag: header("Quoted lower-case hex SHA-256 of the whole file; send it in If-None-Match or If-Range."),
  "accept-ranges": header("Always `bytes`.")
}

/** The 206, 304 and 416 responses, which a handler returning raw responses cannot declare as schemas. */
const downloadResponses = (operation: Record<string, any>) => {
  const full = operation.responses["200"] ?? {}
  return {
    ...operation,
    parameters: [
      ...(operation.parameters ?? []),
      {
        name: "range",
        in: "header",
        required: false,
        description:
          "One byte range, e.g. `bytes=0-1023`, `bytes=1024-` or `bytes=-500`. Several ranges are answered with the whole file.",
        schema: { type: "string" }
      },
      {
        name: "if-none-match",
        in: "header",
        required: false,
        description: "An ETag from an earlier download; 304 when the file is unchanged.",
        schema: { type: "string" }
      },
      {
        name: "if-range",
        in: "header",
        required: false,
        description: "Serve the range only if the ETag still matches; otherwise the whole file.",
        schema: { type: "string" }
      }
    ],
    responses: {
      ...operation.responses,
      "200": { ...full, description: "The whole file.", headers: bodyHeaders },
      "206": {
        description: "The requested byte range.",
        headers: {
          ...bodyHeaders,
          "content-range": header("`bytes <first>-<last>/<size>`.")
        },
        content: full.content
      },
      "302": {
        description:
          "Only with S3_PRESIGNED_DOWNLOADS=true: the file at a presigned object-storage URL (Location), with the same type and attachment disposition, valid for at most the result link's life.",
        headers: {
          location: header("The presigned URL; a credential until it expires, never cached (`Cache-Control: no-store`).")
        }
      },
      "304": {
        description: "Not modified: If-None-Match matched the ETag.",
        headers: { etag: bodyHeaders.etag }
      },
      "404": {
        ...operation.responses["404"],
        description:
          "JOB_NOT_FOUND: no result file with this id belongs to the account. A text asset (type `text`, e.g. lyrics, " +
          "with a `text_` id) has no file: its content is the asset's `text` in the task, and its id answers this 404 saying so."
      },
      "416": {
        description: "INVALID_REQUEST: the range starts past the end of the file; Content-Range `bytes */<size>` gives the size.",
        headers: { "content-range": header("`bytes */<size>`.") },
        content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorBody" } } }
      }
    }
  }
}

export const ResultsApi = HttpApiGroup.make("results")
  .add(
    HttpApiEndpoint.get("download", "/api/v1/results/:id", {
      params: { id: Schema.String.annotate({ description: "The <uuid> of an asset url /api/v1/results/<uuid>." }) },
      success: HttpApiSchema.StreamUint8Array({ contentType: resultContentTypes }),
      error: [Errors.JobNotFound, Errors.ResultExpired, Errors.ApiUnavailable]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Download a result file",
          description:
            "The bytes of a result of one of the caller's tasks. Content-Type is the file's type, matching the asset's `type`. " +
            "Past the task's `expiresAt` (the account's retention) the file is removed: 410 RESULT_EXPIRED."
        })
      )
      .annotateMerge(requireScope("jobs:read", downloadResponses))
  )
  .middleware(Authentication)
  .annotate(OpenApi.Description, "Download result files.")
