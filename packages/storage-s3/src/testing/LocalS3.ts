/**
 * A real S3-compatible server for tests and benchmarks: s3rver, file-backed in a temporary
 * directory, on a free port of 127.0.0.1, with one bucket. s3rver lacks AbortMultipartUpload:
 * it is added here (the upload's parts removed), and `incompleteUploads` counts what is left; and
 * it reads `Range: bytes=N-0` as "to the end": a range ending at byte 0 is served as one byte here.
 */
import { createReadStream } from "node:fs"
import { mkdtemp, readdir, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Option } from "effect"
import S3rver from "s3rver"
import type { S3Settings } from "../S3Settings.ts"

/** s3rver's built-in key pair. */
export const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } as const

export interface LocalS3 {
  readonly bucket: string
  readonly endpoint: string
  /** Where s3rver keeps the bucket's files. */
  readonly directory: string
  /** Settings that reach this server (path style, its endpoint). */
  readonly settings: S3Settings
  /** The environment a process needs to use this server as S3_BUCKET (credentials included). */
  readonly env: Readonly<Record<string, string>>
  /** The keys of the bucket's objects under `prefix`. */
  readonly objectKeys: (prefix?: string) => Promise<ReadonlyArray<string>>
  /** Multipart uploads begun and neither completed nor aborted. */
  readonly incompleteUploads: () => Promise<number>
  /** Stops listening (open connections are dropped); `resume` listens again on the same port. */
  readonly pause: () => Promise<void>
  readonly resume: () => Promise<void>
  /** Stops the server and removes its files. */
  readonly close: () => Promise<void>
}

const OBJECT_SUFFIX = "._S3rver_object"

const uploadsOf = (directory: string, bucket: string) => join(directory, bucket, "._S3rver_uploads")

const serve = async (directory: string, bucket: string, port: number): Promise<S3rver> => {
  const server = new S3rver({ address: "127.0.0.1", port, directory, silent: true, configureBuckets: [{ name: bucket }] })
  const getObject = server.store.getObject.bind(server.store)
  server.store.getObject = async (bucketName, key, options) => {
    if (options?.end !== 0) return getObject(bucketName, key, options)
    const object = await getObject(bucketName, key, { start: 0 })
    if (object?.content) {
      object.content.destroy()
      object.content = createReadStream(join(directory, bucketName, `${key}${OBJECT_SUFFIX}`), { start: 0, end: 0 })
      object.range = { start: 0, end: 0 }
    }
    return object
  }
  server.middleware.unshift(async (ctx, next) => {
    const uploadId = ctx.query["uploadId"]
    if (ctx.method !== "DELETE" || typeof uploadId !== "string") return next()
    await rm(join(uploadsOf(directory, bucket), uploadId), { recursive: true, force: true })
    ctx.status = 204
  })
  await server.run()
  return server
}

const stop = (server: S3rver): Promise<void> =>
  new Promise((resolve) => {
    server.httpServer.close(() => resolve())
    server.httpServer.closeAllConnections()
  })

export const start = async (options: { readonly bucket?: string; readonly prefix?: string } = {}): Promise<LocalS3> => {
  const bucket = options.bucket ?? "taskmeter-test"
  const directory = await mkdtemp(join(tmpdir(), "taskmeter-s3-"))
  let server = await serve(directory, bucket, 0)
  const address = server.httpServer.address()
  if (address === null || typeof address === "string") throw new Error("s3rver is not listening on a port")
  const endpoint = `http://127.0.0.1:${address.port}`
  const settings: S3Settings = {
    bucket,
    prefix: options.prefix ?? "",
    endpoint: Option.some(endpoint),
    region: "us-east-1",
    forcePathStyle: true,
    presignedDownloads: false
  }
  let paused = false
  return {
    bucket,
    endpoint,
    directory,
    settings,
    env: {
      S3_BUCKET: bucket,
      S3_PREFIX: settings.prefix,
      S3_ENDPOINT: endpoint,
      S3_REGION: settings.region,
      S3_FORCE_PATH_STYLE: "true",
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey
    },
    objectKeys: async (prefix = "") => {
      const entries = await readdir(join(directory, bucket, prefix), { recursive: true }).catch(() => [])
      return entries
        .filter((entry) => entry.endsWith(OBJECT_SUFFIX))
        .map((entry) => `${prefix}${entry.slice(0, -OBJECT_SUFFIX.length)}`)
        .sort()
    },
    incompleteUploads: () =>
      readdir(uploadsOf(directory, bucket)).then(
        (entries) => entries.length,
        () => 0
      ),
    pause: async () => {
      paused = true
      await stop(server)
    },
    resume: async () => {
      server = await serve(directory, bucket, address.port)
      paused = false
    },
    close: async () => {
      if (!paused) await stop(server)
      await rm(directory, { recursive: true, force: true })
    }
  }
}
