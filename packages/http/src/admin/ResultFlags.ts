/**
 * `task resolve`'s results: `--result-url` links the server fetches and `--result-file` files
 * read here and uploaded, each flag repeatable, in that order. A result's content type is
 * `--content-type` when given, else read off its name's extension (the common media types).
 */
import { readFile } from "node:fs/promises"
import { extname } from "node:path"
import { Effect } from "effect"
import type { ResultToAttach } from "./AdminRpc.ts"

const BY_EXTENSION: { readonly [extension: string]: string } = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".webp": "image/webp",
  ".gif": "image/gif",
  ".mp3": "audio/mpeg",
  ".wav": "audio/wav",
  ".m4a": "audio/mp4",
  ".ogg": "audio/ogg",
  ".mp4": "video/mp4",
  ".webm": "video/webm",
  ".mov": "video/quicktime",
  ".txt": "text/plain",
  ".md": "text/markdown"
}

const contentTypeOf = (name: string, given: string | undefined): string | undefined =>
  given ?? BY_EXTENSION[extname(name).toLowerCase()]

/** The results to attach, or the message of what the operator must fix. */
export const read = (options: {
  readonly urls: ReadonlyArray<string>
  readonly files: ReadonlyArray<string>
  readonly contentType: string | undefined
}): Effect.Effect<ReadonlyArray<ResultToAttach>, string> =>
  Effect.gen(function* () {
    const unknownType = (name: string) =>
      `cannot tell the content type of ${name} from its extension; give --content-type (such as image/png)`
    const links = yield* Effect.forEach(options.urls, (url) => {
      const contentType = contentTypeOf(URL.canParse(url) ? new URL(url).pathname : url, options.contentType)
      return contentType === undefined ? Effect.fail(unknownType(url)) : Effect.succeed({ url, contentType })
    })
    const files = yield* Effect.forEach(options.files, (path) =>
      Effect.gen(function* () {
        const contentType = contentTypeOf(path, options.contentType)
        if (contentType === undefined) return yield* Effect.fail(unknownType(path))
        const bytes = yield* Effect.tryPromise({
          try: () => readFile(path),
          catch: (cause) => `cannot read ${path}: ${cause instanceof Error ? cause.message : String(cause)}`
        })
        return { base64: bytes.toString("base64"), contentType }
      })
    )
    return [...links, ...files]
  })
