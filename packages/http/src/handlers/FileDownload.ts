/**
 * The response for a download of a stored file (a result, or an upload through a signed media link):
 * its bytes streamed from the BlobStore with Content-Type, Content-Length, the SHA-256 as ETag, one
 * Range (206, or 416), If-Range and If-None-Match (304), never rendered as a page of our origin
 * (attachment named by FileName, nosniff, CSP sandbox: docs/decisions.md, Hostile input). Finding
 * the file and refusing callers is the route's job.
 */
import { Effect, Stream } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpServerResponse } from "effect/http"
import type { BlobStore, MediaStore } from "@taskmeter/kernel"
import { Errors, StoreError } from "@taskmeter/kernel"
import * as ByteRange from "../ByteRange.ts"
import * as ErrorResponse from "../ErrorResponse.ts"
import * as FileName from "../FileName.ts"

/** What a download needs of a stored file's record (a MediaRecord or a ResultRecord). */
export type StoredFile = Pick<MediaStore.MediaRecord, "blobKey" | "contentType" | "sizeBytes" | "sha256">

export interface Options {
  readonly blobs: BlobStore.BlobStore["Service"]
  readonly file: StoredFile
  readonly request: HttpServerRequest.HttpServerRequest
  readonly cacheControl: string
  /** Names the file in a store failure, e.g. `result <id>`. */
  readonly label: string
  /** The file name's stem, e.g. `result-<id>`; FileName adds the extension of its type. */
  readonly fileName: string
}

/** What keeps a browser from running a download as a page (an HTML polyglot upload). */
export const CONTENT_SECURITY_POLICY = "sandbox; default-src 'none'"

/** True when an If-None-Match or If-Range header lists this ETag (or `*`). */
const matches = (header: string | undefined, etag: string): boolean =>
  header !== undefined &&
  header.split(",").some((tag) => {
    const candidate = tag.trim().replace(/^W\//, "")
    return candidate === "*" || candidate === etag
  })

/** Fails with StoreUnavailable when the record's bytes are missing from, or cannot be read out of, the BlobStore. */
export const respond = ({
  blobs,
  cacheControl,
  file,
  fileName,
  label,
  request
}: Options): Effect.Effect<HttpServerResponse.HttpServerResponse, StoreError.StoreUnavailable> =>
  Effect.gen(function* () {
    const etag = `"${file.sha256}"`
    const size = file.sizeBytes
    const common = {
      etag,
      "accept-ranges": "bytes",
      "cache-control": cacheControl,
      "content-disposition": FileName.attachment(fileName, file.contentType),
      "x-content-type-options": "nosniff",
      "content-security-policy": CONTENT_SECURITY_POLICY
    }
    if (matches(request.headers["if-none-match"], etag)) {
      return HttpServerResponse.empty({ status: 304, headers: common })
    }
    const ifRange = request.headers["if-range"]
    const wanted =
      ifRange === undefined || matches(ifRange, etag)
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
    const bytes = yield* blobs.read(file.blobKey, range)
    if (bytes === undefined) {
      return yield* new StoreError.StoreUnavailable({ message: `The bytes of ${label} are missing from the blob store` })
    }
    const body = Stream.fromAsyncIterable(
      bytes,
      (cause) => new StoreError.StoreUnavailable({ message: `Reading ${label} failed`, cause })
    )
    return HttpServerResponse.stream(body, {
      status: range === undefined ? 200 : 206,
      contentType: file.contentType,
      contentLength: range === undefined ? size : range.end - range.start + 1,
      headers: range === undefined ? common : { ...common, "content-range": ByteRange.contentRange(range, size) }
    })
  })
