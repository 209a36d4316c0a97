/**
 * Traces over OTLP/HTTP, configured by the standard variables: OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf, the default, or
 * http/json), OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME (default `taskmeter`),
 * OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_EXPORTER (`otlp`, the default, or `none`), OTEL_SDK_DISABLED. With no endpoint the tracer is off: no span is made.
 */
import { Config, ConfigProvider, Effect, Layer, Option, References } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpExporter, OtlpSerialization, OtlpTracer } from "effect/observability"

export const DEFAULT_SERVICE_NAME = "taskmeter"

const settings = Config.all({
  endpoint: Config.option(Config.String("OTEL_EXPORTER_OTLP_ENDPOINT")),
  tracesEndpoint: Config.option(Config.String("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")),
  disabled: Config.Boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false)),
  protocol: Config.Literals(["http/protobuf", "http/json"], "OTEL_EXPORTER_OTLP_PROTOCOL").pipe(
    Config.withDefault("http/protobuf" as const)
  ),
  exporter: Config.String("OTEL_TRACES_EXPORTER").pipe(Config.withDefault("otlp")),
  serviceName: Config.option(Config.String("OTEL_SERVICE_NAME")),
  resourceAttributes: Config.String("OTEL_RESOURCE_ATTRIBUTES").pipe(Config.withDefault(""))
})

type Settings = Config.Success<typeof settings>

const isEnabled = (s: Settings): boolean =>
  !s.disabled &&
  s.exporter.split(",").some((name) => name.trim() === "otlp") &&
  (Option.isSome(s.endpoint) || Option.isSome(s.tracesEndpoint))

/** OTEL_TRACES_EXPORTER defaults to `otlp` (the specification's default), which effect's reader does not assume. */
const withOtlpDefault = Effect.map(Effect.service(ConfigProvider.ConfigProvider), (current) =>
  ConfigProvider.orElse(current, ConfigProvider.fromEnv({ env: { OTEL_TRACES_EXPORTER: "otlp" } }))
)

/** Whether tracing is configured; spans are made only then. */
export const enabled: Effect.Effect<boolean, Config.ConfigError> = Effect.map(settings, isEnabled)

/**
 * The OTLP tracer when an endpoint is configured, else the tracer switched off; with a Flusher
 * that sends the spans ended so far (the exporter also sends them every OTEL_BSP_SCHEDULE_DELAY).
 */
export const layer: Layer.Layer<OtlpExporter.Flusher, Config.ConfigError> = Layer.unwrap(
  Effect.gen(function* () {
    const s = yield* settings
    if (!isEnabled(s)) return Layer.merge(Layer.succeed(References.TracerEnabled, false), OtlpExporter.layerFlusher)
    const named = Option.isSome(s.serviceName) || /(^|,)\s*service\.name\s*=/.test(s.resourceAttributes)
    return OtlpTracer.layerFromConfig(named ? {} : { resource: { serviceName: DEFAULT_SERVICE_NAME } }).pipe(
      Layer.provide(s.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
      Layer.provide(FetchHttpClient.layer),
      Layer.provide(ConfigProvider.layer(withOtlpDefault))
    )
  })
)
