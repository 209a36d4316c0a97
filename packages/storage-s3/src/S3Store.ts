/**
 * `layer(settings)`: the BlobStore on the bucket of S3Settings, checked at start (StartupCheck),
 * and S3Store, which presigns GETs of its objects for downloads that leave the API server's
 * bandwidth. The client is destroyed with the layer's scope.
 */
import { GetObjectCommand } from "@aws-sdk/client-s3"
import { getSignedUrl } from "@aws-sdk/s3-request-presigner"
import { BlobStore, type StoreError } from "@taskmeter/kernel"
import { Context, Effect, Layer } from "effect"
import * as S3BlobStore from "./S3BlobStore.ts"
import * as S3Client from "./S3Client.ts"
import type { S3Settings } from "./S3Settings.ts"
import { check, type S3NotReady } from "./StartupCheck.ts"
import { unavailable } from "./internal/S3Errors.ts"

export interface PresignOptions {
  /** Clamped to 1 s .. 7 days, SigV4's longest. */
  readonly expiresInSeconds: number
  readonly contentType: string
  readonly contentDisposition: string
}

/** SigV4's longest presigned URL life. */
export const MAX_PRESIGN_SECONDS = 7 * 24 * 3600

export class S3Store extends Context.Service<
  S3Store,
  {
    readonly settings: S3Settings
    /** A GET of `key` that needs no other credential, answering with the given type and disposition. */
    readonly presign: (key: string, options: PresignOptions) => Effect.Effect<string, StoreError.StoreUnavailable>
  }
>()("@taskmeter/storage-s3/S3Store") {}

export const layer = (
  settings: S3Settings,
  options: S3Client.ClientOptions & { readonly partSizeBytes?: number } = {}
): Layer.Layer<BlobStore.BlobStore | S3Store, S3NotReady> =>
  Layer.effectContext(
    Effect.gen(function* () {
      const client = yield* Effect.acquireRelease(
        Effect.sync(() => S3Client.make(settings, options)),
        (client) => Effect.sync(() => client.destroy())
      )
      yield* check(client, settings)
      const blobs = S3BlobStore.make({
        client,
        bucket: settings.bucket,
        prefix: settings.prefix,
        ...(options.partSizeBytes === undefined ? {} : { partSizeBytes: options.partSizeBytes })
      })
      const store = S3Store.of({
        settings,
        presign: (key, { contentDisposition, contentType, expiresInSeconds }) =>
          Effect.tryPromise({
            try: () =>
              getSignedUrl(
                client,
                new GetObjectCommand({
                  Bucket: settings.bucket,
                  Key: `${settings.prefix}${key}`,
                  ResponseContentType: contentType,
                  ResponseContentDisposition: contentDisposition
                }),
                { expiresIn: Math.min(MAX_PRESIGN_SECONDS, Math.max(1, Math.floor(expiresInSeconds))) }
              ),
            catch: unavailable(`presign ${key}`)
          })
      })
      return Context.make(BlobStore.BlobStore, blobs).pipe(Context.add(S3Store, store))
    })
  )
