/**
 * The SDK client for S3Settings: credentials from the SDK's default chain (or given, for tests),
 * standard retries with backoff (4 attempts: throttling, 5xx, timeouts and dropped connections),
 * a 5 s connect and 60 s idle-socket timeout, checksums only where S3 requires them.
 */
import { S3Client } from "@aws-sdk/client-s3"
import { Option } from "effect"
import type { S3Settings } from "./S3Settings.ts"

export interface ClientOptions {
  /** Attempts per call, the first included. Default 4. */
  readonly maxAttempts?: number
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string }
}

export const DEFAULT_MAX_ATTEMPTS = 4

export const make = (
  settings: Pick<S3Settings, "endpoint" | "region" | "forcePathStyle">,
  options: ClientOptions = {}
): S3Client =>
  new S3Client({
    region: settings.region,
    forcePathStyle: settings.forcePathStyle,
    ...Option.match(settings.endpoint, { onNone: () => ({}), onSome: (endpoint) => ({ endpoint }) }),
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
    maxAttempts: options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    retryMode: "standard",
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED"
  })
