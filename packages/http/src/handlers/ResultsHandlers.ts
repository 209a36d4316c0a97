/**
 * GET /api/v1/results/{id}: the bytes of one of the caller's result files, streamed from the
 * BlobStore, with its ETag (the SHA-256), a single HTTP Range (206 / 416) and If-None-Match (304).
 */
import { Effect, Stream } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { BlobStore, Errors, Ids, MediaStore, StoreError } from "@taskmeter/kernel"
import { Api } from "../Api.ts"
import { CurrentCaller } from "../api/Security.ts"
import * as ByteRange from "../ByteRange.ts"
import * as ErrorResponse from "../ErrorResponse.ts"
import { toApiUnavailable } from "./StoreFailures.ts"

const notFound = (id: string) =>
  new Errors.JobNotFound({
    message: Ids.isResultId(id)
      ? `No result ${id} belongs to this account.`
      : `No result has the id ${JSON.stringify(id)}; download results at the url of a task's asset (/api/v1/results/<uuid>).`
  })

/** True when an If-None-Match or If-Range header lists this ETag (or `*`). */
const matches = (header: string | undefined, etag: string): boolean =>
  header !== undefined && header.split(",").some((tag) => {
    const candidate = tag.trim().replace(/^W\//, "")
    return candidate === "*" || candidate === etag
  })

export const layer = HttpApiBuilder.group(Api, "results", (handlers) =>
  Effect.gen(function*() {
    const blobs = yield* BlobStore.BlobStore
    const media = yield* MediaStore.MediaStore
    return handlers.handle("download", ({ params, request }) =>
      Effect.gen(function*() {
        const caller = yield* CurrentCaller
        if (!Ids.isResultId(params.id)) return yield* notFound(params.id)
        const result = yield* media.getResult(caller.accountId, params.id)
        if (result === undefined) return yield* notFound(params.id)
        const etag = `"${result.sha256}"`
        const size = result.sizeBytes
        const common = { etag, "accept-ranges": "bytes", "cache-control": "private, max-age=3600" }
        if (matches(request.headers["if-none-match"], etag)) {
          return HttpServerResponse.empty({ status: 304, headers: common })
        }
        const ifRange = request.headers["if-range"]
        const wanted = ifRange === undefined || matches(ifRange, etag)
          ? ByteRange.parse(request.headers["range"], size)
          : ByteRange.parse(undefined, size)
        if (wanted._tag === "Unsatisfiable") {
          return ErrorResponse.fromError(
            new Errors.InvalidRequest({
              message: `The requested range is outside the file, which is ${size} bytes long; ask for bytes 0 to ${Math.max(0, size - 1)}.`
            }),
            { status: 416, headers: { ...common, "content-range": ByteRange.unsatisfiedRange(size) } }
          )
        }
        const range = wanted._tag === "Partial" ? wanted.range : undefined
        const bytes = yield* blobs.read(result.blobKey, range)
        if (bytes === undefined) {
          return yield* new StoreError.StoreUnavailable({ message: `The bytes of result ${result.id} are missing from the blob store` })
        }
        const body = Stream.fromAsyncIterable(bytes, (cause) =>
          new StoreError.StoreUnavailable({ message: `Reading result ${result.id} failed`, cause }))
        return HttpServerResponse.stream(body, {
          status: range === undefined ? 200 : 206,
          contentType: result.contentType,
          contentLength: range === undefined ? size : range.end - range.start + 1,
          headers: range === undefined ? common : { ...common, "content-range": ByteRange.contentRange(range, size) }
        })
      }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable)))
  }))
