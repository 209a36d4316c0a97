/**
 * The HTTP server's settings from the environment (effect Config): PORT (8787), HOST (127.0.0.1),
 * DATA_DIR (./data, owner-only), MAX_UPLOAD_BYTES (100 MiB), ADMIN_HOST (127.0.0.1) and ADMIN_PORT
 * (8788; 0 picks a free port). The JSON body limit of 256 KB is the spec's (JsonBody). All settings:
 * packages/http/README.md.
 */
import { Config, Context, Layer, Schema } from "effect"

export interface ServerSettings {
  readonly port: number
  readonly host: string
  readonly dataDir: string
  readonly maxUploadBytes: number
  /** ADMIN_HOST: the admin service listens here, apart from the public port. */
  readonly adminHost: string
  /** ADMIN_PORT: 0 picks a free port (admin.json names it). */
  readonly adminPort: number
}

export const defaults: ServerSettings = {
  port: 8787,
  host: "127.0.0.1",
  dataDir: "./data",
  maxUploadBytes: 100 * 1024 * 1024,
  adminHost: "127.0.0.1",
  adminPort: 8788
}

export class ServerConfig extends Context.Service<ServerConfig, ServerSettings>()("@taskmeter/http/ServerConfig") {}

const PortOrZero = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 65535 }))
const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0))

/** The settings as configured, each falling back to its default. */
export const config: Config.Config<ServerSettings> = Config.all({
  port: Config.schema(PortOrZero, "PORT").pipe(Config.withDefault(defaults.port)),
  host: Config.NonEmptyString("HOST").pipe(Config.withDefault(defaults.host)),
  dataDir: Config.NonEmptyString("DATA_DIR").pipe(Config.withDefault(defaults.dataDir)),
  maxUploadBytes: Config.schema(PositiveInt, "MAX_UPLOAD_BYTES").pipe(Config.withDefault(defaults.maxUploadBytes)),
  adminHost: Config.NonEmptyString("ADMIN_HOST").pipe(Config.withDefault(defaults.adminHost)),
  adminPort: Config.schema(PortOrZero, "ADMIN_PORT").pipe(Config.withDefault(defaults.adminPort))
})

/** ServerConfig from the environment. */
export const layer: Layer.Layer<ServerConfig, Config.ConfigError> = Layer.effect(ServerConfig, config)

/** ServerConfig with the given settings over the defaults (tests, embedding). */
export const layerWith = (settings: Partial<ServerSettings>): Layer.Layer<ServerConfig> =>
  Layer.succeed(ServerConfig, { ...defaults, ...settings })
