/**
 * Where blobs go when S3_BUCKET is set, read from the environment: S3_BUCKET, S3_PREFIX,
 * S3_ENDPOINT, S3_REGION (default us-east-1), S3_FORCE_PATH_STYLE and S3_PRESIGNED_DOWNLOADS.
 * Credentials are the AWS SDK's default chain's and never pass through here.
 */
import { Config, ConfigProvider, Effect, Option } from "effect"

export interface S3Settings {
  readonly bucket: string
  /** Put before every key: "" or a path ending in "/". */
  readonly prefix: string
  readonly endpoint: Option.Option<string>
  readonly region: string
  readonly forcePathStyle: boolean
  /** Result downloads answer 302 to a presigned GET instead of streaming through the API. */
  readonly presignedDownloads: boolean
}

export const DEFAULT_REGION = "us-east-1"

/** `media/` for `media`, `media/` for `/media/`, "" for "". */
export const normalizePrefix = (prefix: string): string => {
  const trimmed = prefix.replace(/^\/+|\/+$/g, "")
  return trimmed === "" ? "" : `${trimmed}/`
}

/** The S3 settings, or none when S3_BUCKET is unset (blobs stay under DATA_DIR/blobs). */
export const config: Config.Config<Option.Option<S3Settings>> = Config.all({
  bucket: Config.option(Config.NonEmptyString("S3_BUCKET")),
  prefix: Config.String("S3_PREFIX").pipe(Config.withDefault("")),
  endpoint: Config.option(Config.URL("S3_ENDPOINT").pipe(Config.map((url) => url.href.replace(/\/$/, "")))),
  region: Config.NonEmptyString("S3_REGION").pipe(Config.withDefault(DEFAULT_REGION)),
  forcePathStyle: Config.Boolean("S3_FORCE_PATH_STYLE").pipe(Config.withDefault(false)),
  presignedDownloads: Config.Boolean("S3_PRESIGNED_DOWNLOADS").pipe(Config.withDefault(false))
}).pipe(
  Config.mapEffect(({ bucket, prefix, ...rest }) =>
    Option.isNone(bucket) && rest.presignedDownloads
      ? Effect.fail(
          new Config.ConfigError(
            new ConfigProvider.SourceError({
              message: "S3_PRESIGNED_DOWNLOADS=true needs S3_BUCKET: without a bucket, downloads stream from DATA_DIR/blobs."
            })
          )
        )
      : Effect.succeed(Option.map(bucket, (name): S3Settings => ({ ...rest, bucket: name, prefix: normalizePrefix(prefix) })))
  )
)

/** One line for a start banner: where blobs go, never a credential. */
export const describe = (settings: S3Settings): string =>
  `S3 bucket ${settings.bucket}${settings.prefix === "" ? "" : ` under ${settings.prefix}`} ${Option.match(settings.endpoint, {
    onNone: () => `in ${settings.region}`,
    onSome: (endpoint) => `at ${endpoint}`
  })}`
