/**
 * Result downloads: upstream result URLs expire, so the worker copies each result into the blob
 * store when the task succeeds. `stream` hands over the body as chunks (what `BlobStore.put`
 * takes) and stops it at `maxBytes`; `bytes` collects it for small files.
 *
 * A declared Content-Length over the limit fails before any byte is read; a body that streams
 * past it fails when it does. Both are Terminal (`UPSTREAM_RESULT_TOO_LARGE`): asking again
 * returns the same file. Network failures are Retryable (a download is a read).
 *
 * @example
 * ```ts
 * const download = yield* Download.stream(http, output.url, { maxBytes: 500 * 1024 * 1024 })
 * yield* blobs.put(key, download.body, { maxBytes: 500 * 1024 * 1024 })
 * ```
 */
import { Effect } from "effect"
import { Provider } from "@taskmeter/kernel"
import type { HttpClient } from "./HttpClient.ts"
import * as UpstreamError from "./UpstreamError.ts"

export interface Downloaded {
  /** The upstream's Content-Type, parameters included; undefined when it sent none. */
  readonly contentType: string | undefined
  /** The declared length, when the upstream sent one. */
  readonly contentLength: number | undefined
  /**
   * The body, once. Iterating it throws a `ProviderError` when the body grows past `maxBytes`
   * or the connection fails.
   */
  readonly body: AsyncIterable<Uint8Array>
}

const tooLarge = (url: string, maxBytes: number) =>
  UpstreamError.terminal(UpstreamError.ErrorCodes.ResultTooLarge, `the result at ${url} is larger than ${maxBytes} bytes`)

async function* capped(body: ReadableStream<Uint8Array>, url: string, maxBytes: number): AsyncGenerator<Uint8Array> {
  let size = 0
  const reader = body.getReader()
  try {
    while (true) {
      const next = await reader.read().catch((error: unknown) => {
        throw UpstreamError.fromTransport("poll", error, `downloading ${url}`)
      })
      if (next.done) return
      size += next.value.byteLength
      if (size > maxBytes) throw tooLarge(url, maxBytes)
      yield next.value
    }
  } finally {
    await reader.cancel().catch(() => undefined)
  }
}

export const stream = (
  http: HttpClient,
  url: string,
  options: { readonly maxBytes: number; readonly headers?: { readonly [name: string]: string } | undefined }
): Effect.Effect<Downloaded, Provider.ProviderError> =>
  Effect.flatMap(http.open(url, options.headers), (response) => {
    const declared = response.headers.get("content-length")
    const contentLength = declared === null || !/^\d+$/.test(declared) ? undefined : Number(declared)
    if (contentLength !== undefined && contentLength > options.maxBytes) {
      void response.body?.cancel().catch(() => undefined)
      return Effect.fail(tooLarge(url, options.maxBytes))
    }
    const body = response.body ?? new ReadableStream<Uint8Array>({ start: (controller) => controller.close() })
    return Effect.succeed({
      contentType: response.headers.get("content-type") ?? undefined,
      contentLength,
      body: capped(body, url, options.maxBytes)
    })
  })

/** The whole file in memory. */
export const bytes = (
  http: HttpClient,
  url: string,
  options: { readonly maxBytes: number; readonly headers?: { readonly [name: string]: string } | undefined }
): Effect.Effect<{ readonly contentType: string | undefined; readonly bytes: Uint8Array }, Provider.ProviderError> =>
  Effect.flatMap(stream(http, url, options), (download) =>
    Effect.tryPromise({
      try: async () => {
        const chunks: Array<Uint8Array> = []
        for await (const chunk of download.body) chunks.push(chunk)
        return { contentType: download.contentType, bytes: new Uint8Array(Buffer.concat(chunks)) }
      },
      catch: (error) =>
        error instanceof Provider.ProviderError ? error : UpstreamError.fromTransport("poll", error, `downloading ${url}`)
    }))
