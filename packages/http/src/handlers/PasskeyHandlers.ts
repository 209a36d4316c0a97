/**
 * The passkeys group over @simplewebauthn/server: options with a one-time challenge (stored
 * hashed, 5 minutes), responses verified against it with the public base URL's origin and host as
 * the relying party, credentials kept in the PasskeyStore. A passkey sign-in starts a session as a
 * password sign-in does (AuthHandlers.signingInWith), throttled per client address and credential
 * (Users.throttlePasskeySignIn). The signed-in user lists and removes their own passkeys.
 */
import { createHash } from "node:crypto"
import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse
} from "@simplewebauthn/server"
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "@simplewebauthn/server"
import { Errors, PasskeyStore, Sessions, Users, UserStore } from "@taskmeter/kernel"
import { Api } from "../Api.ts"
import { CurrentSession } from "../api/SessionSecurity.ts"
import { SessionSettings } from "../SessionCookie.ts"
import { signingInWith } from "./AuthHandlers.ts"
import { toApiUnavailable } from "./StoreFailures.ts"
import { clientSource } from "./ClientAddress.ts"

const CHALLENGE_TTL_MS = 5 * 60_000

/** The options as plain JSON: the library leaves unset members `undefined`, which JSON has no value for. */
const jsonOf = (options: object): Record<string, unknown> => JSON.parse(JSON.stringify(options))

const hashOf = (challenge: string): string => createHash("sha256").update(challenge).digest("hex")

/** The challenge the browser signed, read from the response's clientDataJSON; undefined if it has none. */
const challengeOf = (response: Record<string, unknown>): string | undefined => {
  try {
    const inner = response.response as { readonly clientDataJSON?: unknown } | undefined
    if (typeof inner?.clientDataJSON !== "string") return undefined
    const clientData: unknown = JSON.parse(Buffer.from(inner.clientDataJSON, "base64url").toString("utf8"))
    return typeof clientData === "object" &&
      clientData !== null &&
      "challenge" in clientData &&
      typeof clientData.challenge === "string"
      ? clientData.challenge
      : undefined
  } catch {
    return undefined
  }
}

const view = (passkey: PasskeyStore.Passkey) => ({
  id: passkey.credentialId,
  name: passkey.name,
  createdAt: passkey.createdAt.toISOString(),
  lastUsedAt: passkey.lastUsedAt?.toISOString() ?? null
})

const notFound = (id: string) =>
  new Errors.RequestNotFound({
    message: `You have no passkey ${JSON.stringify(id)}; GET /api/v1/auth/passkeys lists yours.`
  })

const notVerified = () =>
  new Errors.InvalidRequest({
    message:
      "This passkey did not verify (an unknown, used or expired challenge, or another origin); ask for new options and try again."
  })

const signInRefused = () =>
  new Errors.AuthRequired({
    message: "This passkey is not one of this service's, or it did not verify; sign in with your password, or try again."
  })

export const layer = HttpApiBuilder.group(Api, "passkeys", (handlers) =>
  Effect.gen(function* () {
    const store = yield* PasskeyStore.PasskeyStore
    const users = yield* Users.Users
    const userStore = yield* UserStore.UserStore
    const signingIn = signingInWith(yield* Sessions.Sessions)
    const { publicBaseUrl } = yield* SessionSettings
    const origin = new URL(publicBaseUrl).origin
    const rpID = new URL(publicBaseUrl).hostname

    const challenge = (purpose: PasskeyStore.ChallengePurpose, userId: PasskeyStore.PasskeyChallenge["userId"], value: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        store.insertChallenge({
          hash: hashOf(value),
          purpose,
          userId,
          createdAt: new Date(now),
          expiresAt: new Date(now + CHALLENGE_TTL_MS)
        })
      )

    /** The challenge of the response, used up; undefined when it is not an unused one of `purpose`. */
    const consume = (response: Record<string, unknown>, purpose: PasskeyStore.ChallengePurpose) =>
      Effect.gen(function* () {
        const value = challengeOf(response)
        if (value === undefined) return undefined
        const used = yield* store.consumeChallenge(hashOf(value), purpose, new Date(yield* Clock.currentTimeMillis))
        return used === undefined ? undefined : { value, used }
      })

    return handlers
      .handle("list", () =>
        Effect.gen(function* () {
          const { live } = yield* CurrentSession
          return { data: (yield* store.listPasskeys(live.user.id)).map(view) }
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("remove", ({ params }) =>
        Effect.gen(function* () {
          const { live } = yield* CurrentSession
          if (!(yield* store.deletePasskey(live.user.id, params.id))) return yield* notFound(params.id)
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("registrationOptions", () =>
        Effect.gen(function* () {
          const { live } = yield* CurrentSession
          const existing = yield* store.listPasskeys(live.user.id)
          const options = yield* Effect.promise(() =>
            generateRegistrationOptions({
              rpName: "taskmeter",
              rpID,
              userName: live.user.email,
              userID: new TextEncoder().encode(live.user.id),
              attestationType: "none",
              excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: [...p.transports] })),
              authenticatorSelection: { residentKey: "required", userVerification: "preferred" }
            })
          )
          yield* challenge("registration", live.user.id, options.challenge)
          return jsonOf(options)
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("register", ({ payload }) =>
        Effect.gen(function* () {
          const { live } = yield* CurrentSession
          const found = yield* consume(payload.response, "registration")
          if (found === undefined || found.used.userId !== live.user.id) return yield* notVerified()
          const verified = yield* Effect.tryPromise(() =>
            verifyRegistrationResponse({
              response: payload.response as unknown as RegistrationResponseJSON,
              expectedChallenge: found.value,
              expectedOrigin: origin,
              expectedRPID: rpID,
              requireUserVerification: false
            })
          ).pipe(Effect.mapError(notVerified))
          if (!verified.verified) return yield* notVerified()
          const { credential } = verified.registrationInfo
          const createdAt = new Date(yield* Clock.currentTimeMillis)
          const passkey: PasskeyStore.Passkey = {
            credentialId: credential.id,
            userId: live.user.id,
            name: payload.name?.trim() ?? "Passkey",
            publicKey: credential.publicKey,
            counter: credential.counter,
            transports: credential.transports ?? [],
            createdAt,
            lastUsedAt: null
          }
          if (!(yield* store.insertPasskey(passkey))) return yield* notVerified()
          return view(passkey)
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("authenticationOptions", () =>
        Effect.gen(function* () {
          const options = yield* Effect.promise(() => generateAuthenticationOptions({ rpID, userVerification: "preferred" }))
          yield* challenge("authentication", null, options.challenge)
          return jsonOf(options)
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("signIn", ({ payload }) =>
        Effect.gen(function* () {
          const credentialId = typeof payload.response.id === "string" ? payload.response.id : ""
          const attempt = Effect.gen(function* () {
            const found = yield* consume(payload.response, "authentication")
            const passkey = credentialId === "" ? undefined : yield* store.findPasskey(credentialId)
            if (found === undefined || passkey === undefined) return yield* signInRefused()
            const verified = yield* Effect.tryPromise(() =>
              verifyAuthenticationResponse({
                response: payload.response as unknown as AuthenticationResponseJSON,
                expectedChallenge: found.value,
                expectedOrigin: origin,
                expectedRPID: rpID,
                credential: {
                  id: passkey.credentialId,
                  publicKey: new Uint8Array(passkey.publicKey),
                  counter: passkey.counter,
                  transports: [...passkey.transports]
                },
                requireUserVerification: false
              })
            ).pipe(Effect.mapError(signInRefused))
            if (!verified.verified) return yield* signInRefused()
            yield* store.recordUse(
              passkey.credentialId,
              verified.authenticationInfo.newCounter,
              new Date(yield* Clock.currentTimeMillis)
            )
            const user = yield* userStore.getUser(passkey.userId)
            if (user === undefined) return yield* signInRefused()
            return yield* users.startSession(user)
          })
          const clientAddress = yield* clientSource
          return yield* signingIn(users.throttlePasskeySignIn({ clientAddress, credentialId }, attempt))
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
  })
)
