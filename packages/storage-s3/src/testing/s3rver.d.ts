/** The part of s3rver's (untyped) API the test server uses. */
declare module "s3rver" {
  import type { Server } from "node:http"
  import type { Readable } from "node:stream"

  interface Options {
    readonly address?: string
    readonly port?: number
    readonly directory?: string
    readonly silent?: boolean
    readonly configureBuckets?: ReadonlyArray<{ readonly name: string }>
  }

  interface Context {
    readonly method: string
    readonly path: string
    readonly query: Record<string, string | Array<string> | undefined>
    status: number
  }

  interface StoredObject {
    content: Readable | null
    range?: { readonly start: number; readonly end: number }
  }

  interface FilesystemStore {
    getObject(
      bucket: string,
      key: string,
      options?: { readonly start?: number; readonly end?: number }
    ): Promise<StoredObject | null>
  }

  export default class S3rver {
    store: FilesystemStore
    constructor(options: Options)
    middleware: Array<(ctx: Context, next: () => Promise<void>) => Promise<void>>
    run(): Promise<{ readonly port: number }>
    close(): Promise<void>
    httpServer: Server
  }
}
