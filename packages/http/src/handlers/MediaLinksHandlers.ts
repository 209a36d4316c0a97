/**
 * GET (and HEAD) /api/v1/media-links/{uuid}?acct&exp&sig: how an upstream fetches a caller's upload
 * with no API key (the kernel's MediaUrls signs the links). A valid link serves that account's
 * upload through FileDownload, cacheable privately until it expires; every link that does not work
 * (an upload past its retention too) is the same 404 JOB_NOT_FOUND. A raw route on the HttpRouter, outside the API callers use
 * (OpenApiDocument lists it as internal).
 */
import { Clock, Effect } from "effect"
import { HttpRouter } from "effect/http"
import { BlobStore, Errors, MediaReference, MediaStore, MediaUrls } from "@taskmeter/kernel"
import * as FileDownload from "./FileDownload.ts"
import { toApiUnavailable } from "./StoreFailures.ts"

/** The route's path, in the OpenAPI document's form. */
export const PATH = `${MediaUrls.PATH_PREFIX}{uuid}`

const notFound = new Errors.JobNotFound({
  message: "Nothing is served at this media link: it is unknown, altered or expired. Links are signed for one task's run."
})

/** Whole seconds from `nowMs` until the link's expiry (its `exp`, which `verify` has already checked). */
const secondsLeft = (url: string, nowMs: number): number => {
  const exp = Number(new URL(url, "http://link.invalid").searchParams.get("exp"))
  return Math.max(0, Math.floor((exp * 1000 - nowMs) / 1000))
}

/** The route, on the HttpRouter in context; needs MediaUrls (the same secret the workers sign with). */
export const layer = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const links = yield* MediaUrls.MediaUrls
    const blobs = yield* BlobStore.BlobStore
    const media = yield* MediaStore.MediaStore
    yield* router.add("GET", `${MediaUrls.PATH_PREFIX}:uuid`, (request) =>
      Effect.gen(function* () {
        const link = yield* links.verify(request.url)
        if (link._tag !== "Valid") return yield* notFound
        const upload = yield* media.getMedia(link.accountId, link.reference)
        const now = yield* Clock.currentTimeMillis
        // An upload past its retention is gone, as an unknown one.
        if (upload === undefined || upload.expiresAt.getTime() <= now) return yield* notFound
        return yield* FileDownload.respond({
          blobs,
          file: upload,
          request,
          cacheControl: `private, max-age=${secondsLeft(request.url, now)}`,
          fileName: `media-${MediaReference.uuidOf(link.reference)}`,
          label: `upload ${link.reference}`
        })
      }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
    )
  })
)
