/**
 * GET (and HEAD) /api/v1/result-links/{uuid}?acct&exp&sig: a result file through a signed link with
 * no API key (ResultUrls signs them for the MCP tools). A valid link serves what GET
 * /api/v1/results/{id} serves, through FileDownload (or a presigned S3 GET living no longer than
 * the link: PresignedDownloads), cacheable privately until it expires; the
 * signature is checked before any store read, and every link that does not work is the same 404
 * JOB_NOT_FOUND; a result past its retention is 410 RESULT_EXPIRED, as at /api/v1/results. A raw route: the link is its credential, which the API's middleware has no place for.
 */
import { Clock, Effect } from "effect"
import { HttpRouter } from "effect/http"
import { BlobStore, Errors, MediaStore, ResultUrls } from "@taskmeter/kernel"
import * as PresignedDownloads from "./PresignedDownloads.ts"
import { expired } from "./ResultsHandlers.ts"
import { toApiUnavailable } from "./StoreFailures.ts"

/** The route's path, in the OpenAPI document's form. */
export const PATH = `${ResultUrls.PATH_PREFIX}{uuid}`

const notFound = new Errors.JobNotFound({
  message:
    "Nothing is served at this result link: it is unknown, altered or expired. " +
    "Ask for the task again (get_task) for a fresh link."
})

/** The route, on the HttpRouter in context; needs ResultUrls (the same secret the MCP tools sign with). */
export const layer = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const links = yield* ResultUrls.ResultUrls
    const blobs = yield* BlobStore.BlobStore
    const media = yield* MediaStore.MediaStore
    const presigned = yield* Effect.serviceOption(PresignedDownloads.PresignedDownloads)
    yield* router.add("GET", `${ResultUrls.PATH_PREFIX}:uuid`, (request) =>
      Effect.gen(function* () {
        const link = yield* links.verify(request.url)
        if (link._tag !== "Valid") return yield* notFound
        const result = yield* media.getResult(link.accountId, link.resultId)
        if (result === undefined) return yield* notFound
        yield* expired(result)
        const now = yield* Clock.currentTimeMillis
        const secondsLeft = Math.max(0, Math.floor((link.expiresAt.getTime() - now) / 1000))
        return yield* PresignedDownloads.respond(presigned, {
          secondsLeft,
          blobs,
          file: result,
          request,
          cacheControl: `private, max-age=${secondsLeft}`,
          fileName: `result-${result.id}`,
          label: `result ${result.id}`
        })
      }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
    )
  })
)
