/**
 * API keys of the signed-in account, for the console: list (no secrets), create (the secret shown
 * once), revoke. Only under a session: an API key cannot make or revoke keys.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Errors, Scope } from "@taskmeter/kernel"
import * as DisplayName from "./DisplayName.ts"
import { SessionAuth } from "./SessionSecurity.ts"

export const ApiKey = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  displayPrefix: Schema.String.annotate({ description: "The key's first characters, to tell keys apart." }),
  scopes: Schema.Array(Scope.Scope),
  rateLimitPerMinute: Schema.NullOr(Schema.Int).annotate({ description: "null: the server's default." }),
  usageLimit: Schema.NullOr(Schema.Int).annotate({ description: "Billable submissions the key may ever make; null: unlimited." }),
  usageCount: Schema.Int,
  createdAt: Schema.String.annotate({ format: "date-time" }),
  revokedAt: Schema.NullOr(Schema.String.annotate({ format: "date-time" }))
}).annotate({ identifier: "ApiKey" })
export type ApiKey = typeof ApiKey.Type

const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

export const CreateKeyRequest = Schema.Struct({
  name: DisplayName.make(100, "key"),
  scopes: Schema.Array(Scope.Scope).check(Schema.isMinLength(1)),
  rateLimitPerMinute: Schema.optionalKey(Schema.NullOr(PositiveInt)),
  usageLimit: Schema.optionalKey(Schema.NullOr(PositiveInt))
}).annotate({ identifier: "CreateKeyRequest" })

export const CreatedKey = Schema.Struct({
  key: ApiKey,
  secret: Schema.String.annotate({ description: "The whole key (tm_...); shown this once and never again." })
}).annotate({ identifier: "CreatedKey" })

export const KeysApi = HttpApiGroup.make("keys")
  .add(
    HttpApiEndpoint.get("list", "/api/v1/keys", {
      success: Schema.Struct({ data: Schema.Array(ApiKey) }),
      error: [Errors.ApiUnavailable]
    }).annotateMerge(OpenApi.annotations({ summary: "List API keys", description: "Newest first; revoked ones too." })),
    HttpApiEndpoint.post("create", "/api/v1/keys", {
      payload: CreateKeyRequest,
      success: CreatedKey.pipe(HttpApiSchema.status(201)),
      error: [Errors.InvalidRequest, Errors.ApiUnavailable]
    }).annotateMerge(OpenApi.annotations({ summary: "Create an API key", description: "The secret is in this answer only." })),
    HttpApiEndpoint.delete("revoke", "/api/v1/keys/:id", {
      params: { id: Schema.String },
      success: HttpApiSchema.NoContent,
      error: [Errors.RequestNotFound, Errors.ApiUnavailable]
    }).annotateMerge(
      OpenApi.annotations({ summary: "Revoke an API key", description: "A key of another account is REQUEST_NOT_FOUND." })
    )
  )
  .middleware(SessionAuth)
  .annotate(OpenApi.Description, "API keys of the signed-in account (console sessions only).")
