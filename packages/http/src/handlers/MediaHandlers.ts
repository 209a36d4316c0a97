/**
 * POST /api/v1/media: the raw body is streamed into the BlobStore (never held whole), after its
 * leading bytes have shown that it is what its Content-Type says. The size cap is checked on
 * the declared Content-Length first and again while the bytes stream.
 */
import { Clock, Effect, Stream } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { BlobStore, Errors, MediaReference, MediaStore, Retention } from "@taskmeter/kernel"
import { Api } from "../Api.ts"
import type { UploadContentType, UploadedMedia } from "../api/MediaApi.ts"
import { uploadContentTypes } from "../api/MediaApi.ts"
import { CurrentCaller } from "../api/Security.ts"
import { checkContentLength, mediaTypeOf } from "../JsonBody.ts"
import * as MediaKind from "../MediaKind.ts"
import { ServerConfig } from "../ServerConfig.ts"
import { toApiUnavailable } from "./StoreFailures.ts"

const isUploadType = (type: string | undefined): type is UploadContentType =>
  uploadContentTypes.some((accepted) => accepted === type)

const tooLarge = (maxBytes: number) =>
  new Errors.InputTooLarge({ message: `The upload is larger than the limit of ${maxBytes} bytes; send a smaller file.` })

const unreadable = () => new Errors.InvalidRequest({ message: "The upload could not be read; send it again." })

/** The body as chunks, with its first bytes read ahead so that they can be checked before storing. */
const readAhead = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.tryPromise({
    try: async () => {
      const iterator = Stream.toAsyncIterable(request.stream)[Symbol.asyncIterator]()
      const read: Array<Uint8Array> = []
      let readBytes = 0
      let ended = false
      while (readBytes < MediaKind.SNIFF_BYTES) {
        const next = await iterator.next()
        if (next.done === true) {
          ended = true
          break
        }
        read.push(next.value)
        readBytes += next.value.byteLength
      }
      const head = Buffer.concat(read, readBytes)
      async function* body(): AsyncGenerator<Uint8Array> {
        if (head.byteLength > 0) yield head
        if (ended) return
        for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) yield next.value
      }
      return { head: head.subarray(0, MediaKind.SNIFF_BYTES), body: body() }
    },
    catch: unreadable
  })

export const layer = HttpApiBuilder.group(Api, "media", (handlers) =>
  Effect.gen(function* () {
    const blobs = yield* BlobStore.BlobStore
    const media = yield* MediaStore.MediaStore
    const { maxUploadBytes } = yield* ServerConfig
    return handlers.handleRaw("upload", ({ request }) =>
      Effect.gen(function* () {
        const caller = yield* CurrentCaller
        const contentType = mediaTypeOf(request.headers["content-type"])
        if (!isUploadType(contentType)) {
          return yield* new Errors.InvalidRequest({
            message:
              `Send the file with a Content-Type of ${uploadContentTypes.join(", ")}` +
              (contentType === undefined ? "." : ` (not ${contentType}).`)
          })
        }
        yield* checkContentLength(request, maxUploadBytes, () => tooLarge(maxUploadBytes))
        const { body, head } = yield* readAhead(request)
        if (head.byteLength === 0) {
          return yield* new Errors.InvalidRequest({ message: "The body is empty; send the file's bytes as the body." })
        }
        if (!MediaKind.compatibleTypes(head).includes(contentType)) {
          return yield* new Errors.InvalidRequest({
            message:
              `The body is not ${contentType}: its leading bytes look like ${MediaKind.describe(head)}. ` +
              "Send the Content-Type of the file's real format."
          })
        }
        const reference = MediaReference.make()
        const blobKey = `media/${MediaReference.uuidOf(reference)}`
        const written = yield* blobs
          .put(blobKey, body, { maxBytes: maxUploadBytes })
          .pipe(Effect.catchTag("BlobTooLarge", () => Effect.fail(tooLarge(maxUploadBytes))))
        const createdAt = new Date(yield* Clock.currentTimeMillis)
        const { days } = yield* Retention.ResultRetention
        const expiresAt = yield* media
          .putMedia({
            reference,
            accountId: caller.accountId,
            contentType,
            sizeBytes: written.sizeBytes,
            sha256: written.sha256,
            blobKey,
            createdAt,
            expiresAt: Retention.expiresAt(createdAt, days)
          })
          .pipe(Effect.tapError(() => Effect.ignore(blobs.remove(blobKey))))
        const uploaded: UploadedMedia = {
          reference,
          contentType,
          sizeBytes: written.sizeBytes,
          sha256: written.sha256,
          createdAt: createdAt.toISOString(),
          expiresAt: expiresAt.toISOString()
        }
        return HttpServerResponse.jsonUnsafe(uploaded, { status: 201 })
      }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
    )
  })
)
