/**
 * Where an adapter's base URL, credentials and limits come from: plain options, or effect `Config`
 * under a per-family prefix: `<PREFIX>_API_KEY` (required), `<PREFIX>_BASE_URL` (overrides the
 * protocol's public one) and `<PREFIX>_MAX_CONCURRENCY` (upstream jobs under way at once).
 */
import { Config, Option, Redacted } from "effect"
import * as HttpClient from "./HttpClient.ts"

/** What every HTTP adapter takes. */
export interface AdapterOptions {
  readonly apiKey: string | Redacted.Redacted<string>
  /** The protocol's public base URL when omitted. */
  readonly baseUrl?: string | undefined
  /** A shared client, or options for the adapter's own. */
  readonly http?: HttpClient.HttpClient | HttpClient.Options | undefined
  readonly maxConcurrency?: number | undefined
}

/** What a family's adapter takes: the shared options and replacements for its upstream model ids. */
export interface FamilyOptions<Slug extends string> extends AdapterOptions {
  /** Replaces upstream model ids, e.g. after the upstream renames one. */
  readonly upstreamModels?: Partial<Record<Slug, string>> | undefined
}

export interface Resolved {
  readonly baseUrl: string
  readonly apiKey: string
  readonly http: HttpClient.HttpClient
  readonly maxConcurrency: number | undefined
}

const isClient = (http: AdapterOptions["http"]): http is HttpClient.HttpClient => http !== undefined && "send" in http

/** Checks and normalizes the options; throws on a base URL that is not absolute http(s). */
export const resolve = (options: AdapterOptions, defaultBaseUrl: string): Resolved => {
  const baseUrl = (options.baseUrl ?? defaultBaseUrl).replace(/\/+$/, "")
  if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
    throw new Error(`Provider base URL must be an absolute http(s) URL, not ${JSON.stringify(baseUrl)}`)
  }
  return {
    baseUrl,
    apiKey: Redacted.isRedacted(options.apiKey) ? Redacted.value(options.apiKey) : options.apiKey,
    http: isClient(options.http) ? options.http : HttpClient.make(options.http),
    maxConcurrency: options.maxConcurrency
  }
}

/**
 * The options of one family from configuration: `<prefix>_API_KEY`, `_BASE_URL`, `_MAX_CONCURRENCY`;
 * with `http`, the adapter uses that client instead of one of its own.
 */
export const config = (prefix: string, http?: HttpClient.HttpClient): Config.Config<AdapterOptions> =>
  Config.all({
    apiKey: Config.Redacted(`${prefix}_API_KEY`),
    baseUrl: Config.option(Config.String(`${prefix}_BASE_URL`)),
    maxConcurrency: Config.option(Config.Int(`${prefix}_MAX_CONCURRENCY`))
  }).pipe(
    Config.map(({ apiKey, baseUrl, maxConcurrency }) => ({
      apiKey,
      baseUrl: Option.getOrUndefined(baseUrl),
      maxConcurrency: Option.getOrUndefined(maxConcurrency),
      ...(http === undefined ? {} : { http })
    }))
  )
