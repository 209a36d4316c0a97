/**
 * S3_PRESIGNED_DOWNLOADS=true: an authorized result download answers 302 to a presigned S3 GET
 * (with the response's type and attachment disposition) valid for at most the result link's life,
 * so the bytes leave the API server's bandwidth. Without this service in context a download
 * streams through FileDownload as always. Why: docs/decisions.md (Object storage).
 */
import { Context, Effect, Layer, Option } from "effect"
import { HttpServerResponse } from "effect/http"
import type { StoreError } from "@taskmeter/kernel"
import { S3Store } from "@taskmeter/storage-s3"
import * as FileDownload from "./FileDownload.ts"
import * as FileName from "../FileName.ts"

export class PresignedDownloads extends Context.Service<
  PresignedDownloads,
  {
    /** The longest a presigned URL lives: RESULT_LINK_TTL_SECONDS. */
    readonly maxSeconds: number
    readonly presign: S3Store.S3Store["Service"]["presign"]
  }
>()("@taskmeter/http/PresignedDownloads") {}

/** Presigns with the S3Store of the storage layer, for at most `maxSeconds`. */
export const layer = (maxSeconds: number): Layer.Layer<PresignedDownloads, never, S3Store.S3Store> =>
  Layer.effect(
    PresignedDownloads,
    Effect.map(S3Store.S3Store, (store) => PresignedDownloads.of({ maxSeconds, presign: store.presign }))
  )

/** How a result route answers: a 302 to S3 when configured, else FileDownload's response. */
export const respond = (
  presigned: Option.Option<PresignedDownloads["Service"]>,
  options: FileDownload.Options & { readonly secondsLeft?: number }
): Effect.Effect<HttpServerResponse.HttpServerResponse, StoreError.StoreUnavailable> =>
  Option.match(presigned, {
    onNone: () => FileDownload.respond(options),
    onSome: ({ maxSeconds, presign }) =>
      Effect.map(
        presign(options.file.blobKey, {
          expiresInSeconds: Math.min(maxSeconds, options.secondsLeft ?? maxSeconds),
          contentType: options.file.contentType,
          contentDisposition: FileName.attachment(options.fileName, options.file.contentType)
        }),
        // The URL is a credential for its life: never stored by a cache.
        (url) => HttpServerResponse.redirect(url, { status: 302, headers: { "cache-control": "no-store" } })
      )
  })
