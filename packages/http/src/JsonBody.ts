/**
 * Reading a request's JSON body within the spec's 256 KB limit, for the API and the routes beside
 * it (chat), without reading past it: a declared Content-Length over the limit is refused before any
 * byte is read, a body without one at the first chunk that crosses it. Every refusal says what to fix.
 */
import { ByteSize, Effect } from "effect"
import { HttpIncomingMessage } from "effect/http"
import type { HttpServerRequest } from "effect/http"
import { Errors } from "@taskmeter/kernel"

/** The spec's limit for JSON request bodies: 256 KB. */
export const MAX_JSON_BODY_BYTES = 256 * 1024

const tooLarge = (maxBytes: number) =>
  new Errors.InputTooLarge({
    message: `The request body is larger than ${maxBytes} bytes; upload media with POST /api/v1/media and send its media:<uuid> reference instead of inline data.`
  })

/** The media type of a Content-Type header, lower-cased and without parameters. */
export const mediaTypeOf = (contentType: string | undefined): string | undefined => {
  const type = contentType?.split(";")[0]?.trim().toLowerCase()
  return type === undefined || type === "" ? undefined : type
}

const isJsonMediaType = (type: string): boolean => type === "application/json" || type.endsWith("+json")

const declaresMoreThan = (request: HttpServerRequest.HttpServerRequest, maxBytes: number): boolean => {
  const declared = request.headers["content-length"]
  return declared !== undefined && Number(declared) > maxBytes
}

/**
 * Refuses a declared Content-Length above `maxBytes`, before anything is read. The refusal is
 * built only when refusing: an error captures a stack trace, too dear to make per request.
 */
export const checkContentLength = <E extends Errors.ApiError>(
  request: HttpServerRequest.HttpServerRequest,
  maxBytes: number,
  refusal: () => E
): Effect.Effect<void, E> => (declaresMoreThan(request, maxBytes) ? Effect.fail(refusal()) : Effect.void)

const utf8 = new TextDecoder("utf-8", { fatal: true })

/**
 * The body's bytes, refusing (and reading no further) once they exceed `maxBytes`: the
 * platform's own reader, counting against `MaxBodySize` as the bytes arrive.
 */
export const readLimited = (request: HttpServerRequest.HttpServerRequest, maxBytes: number) =>
  request.arrayBuffer.pipe(
    Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(maxBytes)),
    Effect.mapError((error) =>
      error.reason._tag === "RequestParseError" && error.reason.reason === "BodyTooLarge"
        ? tooLarge(maxBytes)
        : new Errors.InvalidRequest({ message: "The request body could not be read; send it again." })
    )
  )

/**
 * The parsed JSON body: INVALID_REQUEST when the Content-Type is not JSON, the body is empty,
 * not UTF-8 or not JSON; INPUT_TOO_LARGE past `maxBytes` (256 KB unless told otherwise).
 */
export const read = Effect.fnUntraced(function* (
  request: HttpServerRequest.HttpServerRequest,
  options?: { readonly maxBytes?: number | undefined }
) {
  const maxBytes = options?.maxBytes ?? MAX_JSON_BODY_BYTES
  yield* checkContentLength(request, maxBytes, () => tooLarge(maxBytes))
  const type = mediaTypeOf(request.headers["content-type"])
  if (type === undefined || !isJsonMediaType(type)) {
    return yield* new Errors.InvalidRequest({
      message: `Send the body as JSON with the header Content-Type: application/json${type === undefined ? "" : ` (not ${type})`}.`
    })
  }
  const bytes = yield* readLimited(request, maxBytes)
  if (bytes.byteLength === 0) {
    return yield* new Errors.InvalidRequest({ message: "A JSON body is required." })
  }
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    return yield* new Errors.InvalidRequest({ message: "The body is not valid UTF-8 text; send JSON encoded as UTF-8." })
  }
  try {
    return JSON.parse(text) as unknown
  } catch (cause) {
    return yield* new Errors.InvalidRequest({
      message: `The body is not valid JSON (${cause instanceof Error ? cause.message : String(cause)}).`
    })
  }
})
