/**
 * Who is signed in: a session (cookie) as GET /api/v1/auth/session reports it, else an API key
 * the user entered for this tab (kept in sessionStorage, gone when the tab closes). The auth
 * endpoints (sign-up, sign-in, verification, password reset) are the public API's.
 */
import { ApiFailure, sendJson, setCredential } from "./api.ts"

export interface SessionUser {
  readonly id: string
  readonly email: string
  readonly emailVerified: boolean
  readonly role: string
  readonly operator: boolean
}

export type Who =
  | { readonly kind: "session"; readonly user: SessionUser; readonly accountId: string }
  | { readonly kind: "key" }
  | { readonly kind: "none" }

interface SessionBody {
  readonly user: SessionUser
  readonly account: { readonly id: string }
  readonly csrfToken: string
}

const KEY_STORAGE = "taskmeter.apiKey"

const fromSession = (body: SessionBody): Who => {
  setCredential({ kind: "session", csrfToken: body.csrfToken })
  return { kind: "session", user: body.user, accountId: body.account.id }
}

/** The current sign-in, restoring the credential the API calls carry. */
export const load = async (): Promise<Who> => {
  try {
    return fromSession(await sendJson<SessionBody>("/api/v1/auth/session", "GET"))
  } catch (error) {
    if (!(error instanceof ApiFailure) || error.status === undefined || error.status >= 500) throw error
  }
  const secret = sessionStorage.getItem(KEY_STORAGE)
  if (secret === null) {
    setCredential(undefined)
    return { kind: "none" }
  }
  setCredential({ kind: "key", secret })
  return { kind: "key" }
}

export const signIn = async (email: string, password: string): Promise<Who> => {
  await sendJson("/api/v1/auth/sign-in", "POST", { email, password })
  return load()
}

/** Uses an API key for this tab; checked by reading the balance (usage:read). */
export const useKey = async (secret: string, check: () => Promise<unknown>): Promise<Who> => {
  setCredential({ kind: "key", secret })
  try {
    await check()
  } catch (error) {
    setCredential(undefined)
    throw error
  }
  sessionStorage.setItem(KEY_STORAGE, secret)
  return { kind: "key" }
}

export const signUp = (email: string, password: string, invitation: string | undefined) =>
  sendJson("/api/v1/auth/sign-up", "POST", { email, password, ...(invitation ? { invitation } : {}) })

export const verifyEmail = (token: string) => sendJson("/api/v1/auth/verify-email", "POST", { token })

export const requestPasswordReset = (email: string) => sendJson("/api/v1/auth/password-reset", "POST", { email })

export const confirmPasswordReset = (token: string, password: string) =>
  sendJson("/api/v1/auth/password-reset/confirm", "POST", { token, password })

/** Ends the sign-in: the session (here, or everywhere), or this tab's key. */
export const signOut = async (who: Who, everywhere = false): Promise<void> => {
  if (who.kind === "session") await sendJson(`/api/v1/auth/${everywhere ? "sign-out-everywhere" : "sign-out"}`, "POST")
  sessionStorage.removeItem(KEY_STORAGE)
  setCredential(undefined)
}
