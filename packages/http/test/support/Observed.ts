/**
 * A server of `npm start` (main.ts `server`) on a fresh PostgreSQL schema with the simulated
 * provider and in-process workers unless told otherwise, its log lines captured as JSON; and
 * readers of its admin listener's /metrics, parsed by a Prometheus text-format parser.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Layer, Option, Redacted, type Scope } from "effect"
import { HttpServer } from "effect/http"
import parse from "parse-prometheus-text-format"
import type { Family, Sample } from "parse-prometheus-text-format"
import { Simulated } from "@taskmeter/providers"
import * as AdminServer from "../../src/admin/AdminServer.ts"
import * as Main from "../../src/main.ts"
import * as Logging from "../../src/observability/Logging.ts"
import * as ServerConfig from "../../src/ServerConfig.ts"
import { SERVED, token } from "./Servers.ts"
import { databaseUrl, freshSchema } from "./stores.ts"

export interface Observed {
  readonly url: string
  readonly adminUrl: string
  readonly schema: string
  /** Every log line the server wrote so far. */
  readonly lines: Array<string>
}

/** A server as above; `extra` is provided to it (a tracer, a config). */
export const observedServer = <A = never>(
  settings: Partial<Main.Settings> = {},
  extra: Layer.Layer<A, unknown> = Layer.empty as Layer.Layer<A>
): Effect.Effect<Observed, unknown, Scope.Scope> =>
  Effect.gen(function* () {
    const schema = yield* freshSchema("obs")
    const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-obs-"))
    const lines: Array<string> = []
    const all: Main.Settings = {
      ...Main.defaults,
      databaseUrl: Option.some(Redacted.make(databaseUrl)),
      databaseSchema: Option.some(schema),
      ...settings
    }
    const context = yield* Layer.build(
      Main.server({
        settings: all,
        adapters: [Simulated.make({ models: [SERVED] })],
        pricesFile: Main.pricesFileOf(dataDir),
        token,
        dataDir
      }).pipe(
        Layer.provideMerge(Main.serverStorage(dataDir, all)),
        Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminPort: 0 })),
        Layer.provide(Logging.layer({ format: "json", write: (line) => lines.push(line) })),
        Layer.provide(extra)
      )
    )
    return {
      url: HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address),
      adminUrl: Main.localUrl(Context.get(context, AdminServer.AdminListener).address),
      schema,
      lines
    }
  })

/**
 * The admin listener's /metrics: its text, and its families as the parser reads the whole of it
 * (which throws on a line that is not Prometheus text).
 */
export const scrape = (adminUrl: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${adminUrl}/metrics`, { headers })
    return { status: response.status, contentType: response.headers.get("content-type"), text: await response.text() }
  }).pipe(Effect.map((reply) => ({ ...reply, families: reply.status === 200 ? parse(reply.text) : [] })))

/**
 * The samples of the series named `name` exactly (a counter, a gauge, or a histogram's `_count`),
 * parsed on their own: the parser folds a labelled histogram's series into one, so a histogram is
 * read through its `_count` series, as Prometheus itself stores it.
 */
const samplesOf = (text: string, name: string): ReadonlyArray<Sample> => {
  const lines = text.split("\n").filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
  return lines.length === 0 ? [] : (parse(`${lines.join("\n")}\n`).at(0)?.metrics ?? [])
}

const matches = (sample: Sample, labels: Record<string, string>) =>
  Object.entries(labels).every(([key, value]) => sample.labels?.[key] === value)

/** The value of the first series of `name` with these labels (0 when there is none). */
export const valueOf = (text: string, name: string, labels: Record<string, string> = {}): number =>
  Number(samplesOf(text, name).find((sample) => matches(sample, labels))?.value ?? 0)

/** The sum of every series of `name` with these labels. */
export const sumOf = (text: string, name: string, labels: Record<string, string> = {}): number =>
  samplesOf(text, name)
    .filter((sample) => matches(sample, labels))
    .reduce((total, sample) => total + Number(sample.value ?? 0), 0)

/** The type the parser gives the family `name`. */
export const typeOf = (families: ReadonlyArray<Family>, name: string): Family["type"] | undefined =>
  families.find((family) => family.name === name)?.type
