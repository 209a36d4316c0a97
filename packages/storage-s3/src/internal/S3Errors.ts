/** How an S3 failure reads: a missing key, a missing bucket, refused credentials, or anything else. */
import { StoreError } from "@taskmeter/kernel"

interface Failure {
  readonly name?: string
  readonly message?: string
  readonly $metadata?: { readonly httpStatusCode?: number }
}

const failureOf = (cause: unknown): Failure => (typeof cause === "object" && cause !== null ? cause : {})

export const statusOf = (cause: unknown): number | undefined => failureOf(cause).$metadata?.httpStatusCode

export const nameOf = (cause: unknown): string => failureOf(cause).name ?? "Error"

/** The key is not there (GetObject's NoSuchKey, HeadObject's bare 404); a missing bucket is not this. */
export const isMissingKey = (cause: unknown): boolean => {
  const name = nameOf(cause)
  return name === "NoSuchKey" || (name !== "NoSuchBucket" && statusOf(cause) === 404)
}

export const isMissingBucket = (cause: unknown): boolean => nameOf(cause) === "NoSuchBucket"

export const isAccessDenied = (cause: unknown): boolean => {
  const name = nameOf(cause)
  return name === "AccessDenied" || name === "InvalidAccessKeyId" || name === "SignatureDoesNotMatch" || statusOf(cause) === 403
}

/** What a failed call becomes once the SDK's retries are spent: a transient fault of the store. */
export const unavailable = (action: string) => (cause: unknown) =>
  cause instanceof StoreError.StoreUnavailable
    ? cause
    : new StoreError.StoreUnavailable({ message: `S3 could not ${action} (${nameOf(cause)})`, cause })
