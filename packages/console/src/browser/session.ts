/**
 * Who is signed in: a session (cookie) as GET /api/v1/auth/session reports it, else an API key
 * the user entered for this tab (kept in sessionStorage, gone when the tab closes). Sign-up,
 * sign-in, verification and password reset are the public API's auth endpoints; passkeys go
 * through @simplewebauthn/browser with the options JSON the server sends.
 */
import { startAuthentication, startRegistration } from "@simplewebauthn/browser"
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/browser"
import { ApiFailure, call, setCredential } from "./api.ts"

interface SessionBody {
  readonly user: {
    readonly id: string
    readonly email: string
    readonly emailVerified: boolean
    readonly role: string
    readonly operator: boolean
  }
  readonly account: { readonly id: string }
  readonly csrfToken: string
}

export type Who =
  | { readonly kind: "session"; readonly user: SessionBody["user"]; readonly accountId: string }
  | { readonly kind: "key" }
  | { readonly kind: "none" }

const KEY_STORAGE = "taskmeter.apiKey"

const fromSession = (body: SessionBody): Who => {
  setCredential({ kind: "session", csrfToken: body.csrfToken })
  sessionStorage.removeItem(KEY_STORAGE)
  return { kind: "session", user: body.user, accountId: body.account.id }
}

/** The current sign-in, restoring the credential the API calls carry. */
export const load = async (): Promise<Who> => {
  setCredential(undefined)
  try {
    return fromSession(await call(({ api }) => api.auth.session()))
  } catch (error) {
    if (!(error instanceof ApiFailure) || error.code !== "AUTH_REQUIRED") throw error
  }
  const secret = sessionStorage.getItem(KEY_STORAGE)
  if (secret === null) return { kind: "none" }
  setCredential({ kind: "key", secret })
  return { kind: "key" }
}

export const signIn = async (email: string, password: string): Promise<Who> =>
  fromSession(await call(({ api }) => api.auth.signIn({ payload: { email, password } })))

export const signUp = async (email: string, password: string, invitation: string | undefined): Promise<Who> =>
  fromSession(
    await call(({ api }) =>
      api.auth.signUp({ payload: { email, password, ...(invitation === undefined ? {} : { invitation }) } })
    )
  )

/** Signs in with a passkey: the server's options to the browser's WebAuthn, its answer back. */
export const signInWithPasskey = async (): Promise<Who> => {
  const options = await call(({ api }) => api.passkeys.authenticationOptions())
  const response = await startAuthentication({ optionsJSON: options as unknown as PublicKeyCredentialRequestOptionsJSON })
  return fromSession(
    await call(({ api }) => api.passkeys.signIn({ payload: { response: response as unknown as Record<string, unknown> } }))
  )
}

/** Registers a passkey of this browser for the signed-in user, under `name` (the server's default without). */
export const addPasskey = async (name?: string): Promise<void> => {
  const options = await call(({ api }) => api.passkeys.registrationOptions())
  const response = await startRegistration({ optionsJSON: options as unknown as PublicKeyCredentialCreationOptionsJSON })
  await call(({ api }) =>
    api.passkeys.register({
      payload: { response: response as unknown as Record<string, unknown>, ...(name === undefined ? {} : { name }) }
    })
  )
}

/** Uses an API key for this tab; checked by reading the balance (usage:read). */
export const useKey = async (secret: string): Promise<Who> => {
  setCredential({ kind: "key", secret })
  try {
    await call(({ api }) => api.usage.get({ query: { limit: 1 } }))
  } catch (error) {
    setCredential(undefined)
    throw error
  }
  sessionStorage.setItem(KEY_STORAGE, secret)
  return { kind: "key" }
}

export const verifyEmail = (token: string) => call(({ api }) => api.auth.verifyEmail({ payload: { token } }))

export const requestPasswordReset = (email: string) => call(({ api }) => api.auth.requestPasswordReset({ payload: { email } }))

export const confirmPasswordReset = (token: string, password: string) =>
  call(({ api }) => api.auth.confirmPasswordReset({ payload: { token, password } }))

/** Ends the sign-in: the session (here, or everywhere), or this tab's key. */
export const signOut = async (who: Who, everywhere = false): Promise<void> => {
  if (who.kind === "session") {
    await call(({ api }) => (everywhere ? api.auth.signOutEverywhere() : api.auth.signOut()))
  }
  sessionStorage.removeItem(KEY_STORAGE)
  setCredential(undefined)
}
