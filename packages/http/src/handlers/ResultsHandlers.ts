/**
 * GET /api/v1/results/{id}: the bytes of one of the caller's result files, served by
 * FileDownload (ETag, single HTTP Range, If-None-Match), or with S3_PRESIGNED_DOWNLOADS a 302 to
 * a presigned S3 GET (PresignedDownloads). A text asset's id (lyrics) is 404 JOB_NOT_FOUND saying
 * that its content is inline in the task. A result past its `expiresAt` is 410 RESULT_EXPIRED
 * (Retention), whether or not Housekeeping removed its file yet.
 */
import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { BlobStore, Errors, Ids, MediaStore } from "@taskmeter/kernel"
import { Api } from "../Api.ts"
import { CurrentCaller } from "../api/Security.ts"
import * as PresignedDownloads from "./PresignedDownloads.ts"
import { toApiUnavailable } from "./StoreFailures.ts"

const notFound = (id: string) =>
  new Errors.JobNotFound({
    message: Ids.isTextAssetId(id)
      ? `${id} is a text asset: it has no file to download. Its content is the asset's \`text\` in the task (GET /api/v1/jobs/{id}).`
      : Ids.isResultId(id)
        ? `No result file ${id} belongs to this account (a text asset has no file: its content is the asset's \`text\`).`
        : `No result has the id ${JSON.stringify(id)}; download results at the url of a task's asset (/api/v1/results/<uuid>).`
  })

/** The refusal of a result past its retention, or nothing. */
export const expired = (result: { readonly id: string; readonly expiresAt: Date }) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    result.expiresAt.getTime() <= now
      ? Effect.fail(
          new Errors.ResultExpired({
            message:
              `The result ${result.id} expired at ${result.expiresAt.toISOString()} under the account's retention ` +
              "and its file was removed; run the task again for a new one."
          })
        )
      : Effect.void
  )

export const layer = HttpApiBuilder.group(Api, "results", (handlers) =>
  Effect.gen(function* () {
    const blobs = yield* BlobStore.BlobStore
    const media = yield* MediaStore.MediaStore
    const presigned = yield* Effect.serviceOption(PresignedDownloads.PresignedDownloads)
    return handlers.handle("download", ({ params, request }) =>
      Effect.gen(function* () {
        const caller = yield* CurrentCaller
        if (!Ids.isResultId(params.id)) return yield* notFound(params.id)
        const result = yield* media.getResult(caller.accountId, params.id)
        if (result === undefined) return yield* notFound(params.id)
        yield* expired(result)
        return yield* PresignedDownloads.respond(presigned, {
          blobs,
          file: result,
          request,
          cacheControl: "private, max-age=3600",
          fileName: `result-${result.id}`,
          label: `result ${result.id}`
        })
      }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
    )
  })
)
