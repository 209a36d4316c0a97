/**
 * One streamed put: the body hashed, counted and cut into parts as it arrives. A body that ends
 * within the first part is one PutObject; a longer one a multipart upload with one part in flight
 * while the next fills, aborted on any failure so that no object and no incomplete upload remain.
 */
import { createHash } from "node:crypto"
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  type CompletedPart,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand
} from "@aws-sdk/client-s3"
import { BlobStore } from "@taskmeter/kernel"

export interface Target {
  readonly client: S3Client
  readonly bucket: string
  readonly key: string
  readonly partSizeBytes: number
}

export const upload = async (
  { bucket, client, key, partSizeBytes }: Target,
  body: AsyncIterable<Uint8Array>,
  maxBytes: number
): Promise<BlobStore.Written> => {
  const hash = createHash("sha256")
  let sizeBytes = 0
  let buffered: Array<Uint8Array> = []
  let bufferedBytes = 0
  let created: Promise<string> | undefined
  let inFlight: Promise<void> | undefined
  let nextPart = 1
  const parts: Array<CompletedPart> = []

  const uploadId = (): Promise<string> => {
    created ??= client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key })).then(({ UploadId }) => {
      if (UploadId === undefined) throw new Error("CreateMultipartUpload answered no UploadId")
      return UploadId
    })
    return created
  }
  const take = (): Buffer => {
    const data = Buffer.concat(buffered, bufferedBytes)
    buffered = []
    bufferedBytes = 0
    return data
  }
  const sendPart = async (data: Buffer): Promise<void> => {
    const PartNumber = nextPart++
    const UploadId = await uploadId()
    const { ETag } = await client.send(
      new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber, Body: data, ContentLength: data.byteLength })
    )
    parts.push({ PartNumber, ETag })
  }
  const send = async (data: Buffer): Promise<void> => {
    await inFlight
    inFlight = sendPart(data)
    // Its failure is awaited (and thrown) at the next part or the end; not an unhandled rejection meanwhile.
    inFlight.catch(() => undefined)
  }

  try {
    for await (const chunk of body) {
      sizeBytes += chunk.byteLength
      if (sizeBytes > maxBytes) throw new BlobStore.BlobTooLarge({ maxBytes })
      hash.update(chunk)
      buffered.push(chunk)
      bufferedBytes += chunk.byteLength
      if (bufferedBytes >= partSizeBytes) await send(take())
    }
    if (created === undefined && inFlight === undefined) {
      const data = take()
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: data, ContentLength: data.byteLength }))
    } else {
      if (bufferedBytes > 0) await send(take())
      await inFlight
      parts.sort((a, b) => (a.PartNumber ?? 0) - (b.PartNumber ?? 0))
      await client.send(
        new CompleteMultipartUploadCommand({
          Bucket: bucket,
          Key: key,
          UploadId: await uploadId(),
          MultipartUpload: { Parts: parts }
        })
      )
    }
  } catch (error) {
    if (created !== undefined) {
      await inFlight?.catch(() => undefined)
      const UploadId = await created.catch(() => undefined)
      // Best effort: when S3 cannot be reached even for this, the bucket's lifecycle rule ends the upload (README).
      if (UploadId !== undefined) {
        await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId })).catch(() => undefined)
      }
    }
    throw error
  }
  return { sizeBytes, sha256: hash.digest("hex") }
}
