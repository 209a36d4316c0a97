/**
 * Traces in tests: an OTLP/HTTP JSON receiver on a free port of the test's process, for tracers in
 * it and in the processes it starts (every span it received at /v1/traces, with its service's
 * name); the OTEL_* settings that export to it, as a child's environment or as a Tracing layer;
 * and the traceparent a task keeps.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { ConfigProvider, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { PgClient } from "@effect/sql-pg"
import * as Tracing from "../../src/observability/Tracing.ts"
import { databaseUrl } from "./stores.ts"

export interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly links?: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
  readonly attributes?: ReadonlyArray<{ readonly key: string; readonly value: { readonly stringValue?: string } }>
  readonly service: string
}

/** The receiver's base URL (an OTEL_EXPORTER_OTLP_ENDPOINT) and the spans so far; closed with the scope. */
export const receiver = Effect.acquireRelease(
  Effect.promise(
    () =>
      new Promise<{ readonly url: string; readonly spans: Array<OtlpSpan>; readonly close: () => void }>((resolve) => {
        const spans: Array<OtlpSpan> = []
        const server = createServer((request, response) => {
          let body = ""
          request.on("data", (chunk: Buffer) => {
            body += chunk.toString("utf8")
          })
          request.on("end", () => {
            if (request.url === "/v1/traces") {
              for (const resourceSpans of JSON.parse(body).resourceSpans ?? []) {
                const service =
                  resourceSpans.resource.attributes.find((a: any) => a.key === "service.name")?.value.stringValue ?? ""
                for (const scope of resourceSpans.scopeSpans ?? []) {
                  for (const span of scope.spans ?? []) spans.push({ ...span, service })
                }
              }
            }
            response.writeHead(200, { "content-type": "application/json" }).end("{}")
          })
        })
        server.listen(0, "127.0.0.1", () =>
          resolve({
            url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
            spans,
            close: () => server.close()
          })
        )
      })
  ),
  (r) => Effect.sync(r.close)
)

/** A span's string attribute. */
export const attribute = (span: OtlpSpan, key: string) => span.attributes?.find((a) => a.key === key)?.value.stringValue

/** The OTEL_* settings of a tracer exporting to `endpoint` (none: not tracing) as `serviceName`, in batches every 100 ms. */
export const otlpEnv = (endpoint: string | undefined, serviceName: string): Record<string, string> => ({
  ...(endpoint === undefined ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }),
  OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  OTEL_SERVICE_NAME: serviceName,
  OTEL_BSP_SCHEDULE_DELAY: "100"
})

/** The Tracing layer of main.ts under `otlpEnv`. */
export const tracingTo = (endpoint: string | undefined, serviceName: string) =>
  Tracing.layer.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: otlpEnv(endpoint, serviceName) }))))

/** The traceparent column of the task, as stored. */
export const storedTraceparent = (schema: string, taskId: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ readonly traceparent: string | null }>`SELECT traceparent FROM ${sql(schema)}.tasks WHERE id = ${taskId}`
  ).pipe(
    Effect.map((rows) => rows[0]?.traceparent ?? null),
    Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 }))
  )
