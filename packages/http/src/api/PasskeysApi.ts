/**
 * Passkeys (WebAuthn) as a second way to sign in: a signed-in user asks for registration options,
 * passes them to `navigator.credentials.create` and sends the result back to store the passkey;
 * anyone asks for authentication options, passes them to `navigator.credentials.get` and signs in
 * with the result (a new session, as a password sign-in). Options and responses are the JSON forms
 * of the WebAuthn types (base64url for binary), as @simplewebauthn/browser reads and writes them.
 * A signed-in user lists their passkeys (name, added, last used) and removes one; another user's
 * passkey is REQUEST_NOT_FOUND.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Errors, PasskeyStore } from "@taskmeter/kernel"
import { Session } from "./AuthApi.ts"
import * as DisplayName from "./DisplayName.ts"
import { SessionAuth } from "./SessionSecurity.ts"

const WebAuthnJson = (identifier: string, description: string) =>
  Schema.Record(Schema.String, Schema.Unknown).annotate({ identifier, description })

export const CreationOptions = WebAuthnJson(
  "PasskeyCreationOptions",
  "PublicKeyCredentialCreationOptionsJSON: for navigator.credentials.create, its binary fields base64url."
)
export const RequestOptions = WebAuthnJson(
  "PasskeyRequestOptions",
  "PublicKeyCredentialRequestOptionsJSON: for navigator.credentials.get, its binary fields base64url."
)
const CredentialResponse = Schema.Struct({
  response: WebAuthnJson("PasskeyCredential", "The PublicKeyCredential the browser made, as JSON (toJSON()).")
})

export const PasskeyName = DisplayName.make(PasskeyStore.PASSKEY_NAME_MAX, "passkey")

const Registration = Schema.Struct({
  response: CredentialResponse.fields.response,
  name: Schema.optionalKey(PasskeyName.annotate({ description: "Default: Passkey." }))
})

export const RegisteredPasskey = Schema.Struct({
  id: Schema.String.annotate({ description: "The credential id, base64url." }),
  name: Schema.String,
  createdAt: Schema.String.annotate({ format: "date-time" }),
  lastUsedAt: Schema.NullOr(Schema.String.annotate({ format: "date-time" })).annotate({
    description: "The last sign-in with it; null: never."
  })
}).annotate({ identifier: "Passkey" })

export const PasskeysApi = HttpApiGroup.make("passkeys")
  .add(
    HttpApiEndpoint.post("registrationOptions", "/api/v1/auth/passkeys/registration-options", {
      success: CreationOptions,
      error: [Errors.ApiUnavailable]
    })
      .annotateMerge(OpenApi.annotations({ summary: "Options to register a passkey", description: "Valid 5 minutes, once." }))
      .middleware(SessionAuth),
    HttpApiEndpoint.get("list", "/api/v1/auth/passkeys", {
      success: Schema.Struct({ data: Schema.Array(RegisteredPasskey) }),
      error: [Errors.ApiUnavailable]
    })
      .annotateMerge(OpenApi.annotations({ summary: "List your passkeys", description: "The signed-in user's, oldest first." }))
      .middleware(SessionAuth),
    HttpApiEndpoint.delete("remove", "/api/v1/auth/passkeys/:id", {
      params: { id: Schema.String.annotate({ description: "The credential id, base64url." }) },
      success: HttpApiSchema.NoContent,
      error: [Errors.RequestNotFound, Errors.ApiUnavailable]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Remove a passkey",
          description: "It no longer signs in. Another user's passkey, or an unknown id, is REQUEST_NOT_FOUND."
        })
      )
      .middleware(SessionAuth),
    HttpApiEndpoint.post("register", "/api/v1/auth/passkeys", {
      payload: Registration,
      success: RegisteredPasskey.pipe(HttpApiSchema.status(201)),
      error: [Errors.InvalidRequest, Errors.ApiUnavailable]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Register a passkey",
          description:
            "Verifies the new credential against the options' challenge and stores it; INVALID_REQUEST if it does not verify."
        })
      )
      .middleware(SessionAuth),
    HttpApiEndpoint.post("authenticationOptions", "/api/v1/auth/passkeys/authentication-options", {
      success: RequestOptions,
      error: [Errors.CsrfRejected, Errors.ApiUnavailable]
    }).annotateMerge(
      OpenApi.annotations({ summary: "Options to sign in with a passkey", description: "Valid 5 minutes, once." })
    ),
    HttpApiEndpoint.post("signIn", "/api/v1/auth/passkeys/sign-in", {
      payload: CredentialResponse,
      success: Session,
      error: [Errors.InvalidRequest, Errors.AuthRequired, Errors.RateLimited, Errors.CsrfRejected, Errors.ApiUnavailable]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Sign in with a passkey",
        description:
          "A new session (the session cookie), as a password sign-in; AUTH_REQUIRED when the passkey is unknown or does not verify, " +
          "RATE_LIMITED (with Retry-After) after too many refused sign-ins from the address or with the credential."
      })
    )
  )
  .annotate(OpenApi.Description, "Passkeys (WebAuthn) of the console's users.")
