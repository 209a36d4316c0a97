/**
 * What a process does before using the bucket: writes a small object under the prefix, reads it
 * back and removes it. A missing bucket, refused or absent credentials, or an unreachable endpoint
 * fail here with a message saying what to fix, rather than as a 5xx on each later request.
 */
import { randomUUID } from "node:crypto"
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3"
import { Data, Effect } from "effect"
import { isAccessDenied, isMissingBucket, nameOf } from "./internal/S3Errors.ts"
import { describe, type S3Settings } from "./S3Settings.ts"

export class S3NotReady extends Data.TaggedError("S3NotReady")<{ readonly message: string }> {}

const messageOf = (settings: S3Settings, cause: unknown): string => {
  const where = describe(settings)
  if (isMissingBucket(cause)) return `${where} does not exist: create it, or fix S3_BUCKET, S3_ENDPOINT or S3_REGION.`
  if (nameOf(cause) === "CredentialsProviderError") {
    return `No AWS credentials for ${where}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run with an instance role.`
  }
  if (isAccessDenied(cause)) {
    return (
      `${where} refused access (${nameOf(cause)}): the credentials of the AWS default chain need ` +
      "s3:PutObject, s3:GetObject, s3:DeleteObject and s3:AbortMultipartUpload on it."
    )
  }
  const detail = cause instanceof Error ? cause.message : String(cause)
  return `Cannot use ${where} (${nameOf(cause)}: ${detail}); check S3_ENDPOINT, S3_REGION and the network.`
}

/** Writes, reads back and removes `<prefix>.taskmeter-check/<uuid>`. */
export const check = (client: S3Client, settings: S3Settings): Effect.Effect<void, S3NotReady> =>
  Effect.tryPromise({
    try: async () => {
      const Key = `${settings.prefix}.taskmeter-check/${randomUUID()}`
      const written = `taskmeter start-up check ${Key}`
      await client.send(new PutObjectCommand({ Bucket: settings.bucket, Key, Body: written }))
      const object = await client.send(new GetObjectCommand({ Bucket: settings.bucket, Key }))
      const read = await object.Body?.transformToString()
      await client.send(new DeleteObjectCommand({ Bucket: settings.bucket, Key }))
      if (read !== written) throw new Error("the object read back differs from the one written")
    },
    catch: (cause) => new S3NotReady({ message: messageOf(settings, cause) })
  })
