/**
 * Result items as the worker receives them: each one typed by asset type with a Content-Type
 * from that type's list (`Task.mimeTypesOf`), so the stored file and its asset agree.
 */
import type { Provider } from "@taskmeter/kernel"
import { Task } from "@taskmeter/kernel"
import * as UpstreamError from "./UpstreamError.ts"

const byExtension: { readonly [extension: string]: string } = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  mp4: "video/mp4",
  webm: "video/webm",
  mp3: "audio/mpeg",
  wav: "audio/wav"
}

const allowed = (type: Task.AssetType, contentType: string | undefined): string | undefined => {
  const bare = contentType?.split(";")[0]?.trim().toLowerCase()
  return Task.mimeTypesOf[type].find((candidate) => candidate.split(";")[0] === bare)
}

const extensionOf = (url: string): string | undefined => {
  const path = URL.canParse(url) ? new URL(url).pathname : url
  return /\.([a-z0-9]+)$/i.exec(path)?.[1]?.toLowerCase()
}

/**
 * An output at an upstream URL. The Content-Type is the upstream's declared one when it is one
 * of the type's, else the URL's extension's, else the type's usual one.
 */
export const fromUrl = (
  type: Task.AssetType,
  url: string,
  options: { readonly contentType?: string | undefined; readonly metadata?: { readonly [key: string]: unknown } | undefined } = {}
): Provider.ProviderOutput => {
  const extension = extensionOf(url)
  const contentType =
    allowed(type, options.contentType) ??
    allowed(type, extension === undefined ? undefined : byExtension[extension]) ??
    Task.mimeTypesOf[type][0]!
  return { type, url, contentType, ...(options.metadata === undefined ? {} : { metadata: options.metadata }) }
}

/** A text result carried inline. */
export const text = (value: string, metadata?: { readonly [key: string]: unknown }): Provider.ProviderOutput => ({
  type: "text",
  text: value,
  contentType: Task.mimeTypesOf.text[0]!,
  ...(metadata === undefined ? {} : { metadata })
})

/** A finished job's poll result: its outputs, or Failed `UPSTREAM_NO_OUTPUT` when it has none. */
export const delivered = (outputs: ReadonlyArray<Provider.ProviderOutput>, emptyMessage: string): Provider.PollResult =>
  outputs.length === 0
    ? { _tag: "Failed", errorCode: UpstreamError.ErrorCodes.NoOutput, message: emptyMessage }
    : { _tag: "Succeeded", outputs }
