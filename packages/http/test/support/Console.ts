/**
 * Acting as the console does in the http suites: sign up and sign in with the session cookie,
 * and calls under it that send the Origin and the X-CSRF-Token, or leave either out.
 */
import { Effect } from "effect"
import { call, PUBLIC_BASE_URL } from "./TestServer.ts"

export interface SignedIn {
  /** `taskmeter_session=<secret>`, as a browser sends it back. */
  readonly cookie: string
  /** The Set-Cookie header as the server sent it. */
  readonly setCookie: string
  readonly csrfToken: string
  readonly accountId: string
  readonly userId: string
}

export const PASSWORD = "correct horse battery staple"

/** The `taskmeter_session` Set-Cookie of a reply, if any. */
export const sessionSetCookie = (headers: Headers): string | undefined =>
  headers.getSetCookie().find((cookie) => cookie.startsWith("taskmeter_session="))

const json = (origin: string | undefined, extra: Record<string, string> = {}) => ({
  "content-type": "application/json",
  ...(origin === undefined ? {} : { origin }),
  ...extra
})

/** POST a JSON body to an auth endpoint, from the console's origin unless told otherwise. */
export const post = (path: string, body: unknown, options: { origin?: string | undefined; cookie?: string } = {}) =>
  call(path, {
    method: "POST",
    headers: json(
      "origin" in options ? options.origin : PUBLIC_BASE_URL,
      options.cookie === undefined ? {} : { cookie: options.cookie }
    ),
    body: JSON.stringify(body)
  })

const signedInOf = (reply: { status: number; headers: Headers; body: any }, expected: number): SignedIn => {
  if (reply.status !== expected) throw new Error(`expected ${expected}, got ${reply.status}: ${JSON.stringify(reply.body)}`)
  const setCookie = sessionSetCookie(reply.headers)!
  return {
    cookie: setCookie.split(";")[0]!,
    setCookie,
    csrfToken: reply.body.csrfToken,
    accountId: reply.body.account.id,
    userId: reply.body.user.id
  }
}

export const uniqueEmail = (prefix = "user") => `${prefix}-${crypto.randomUUID().slice(0, 8)}@example.com`

export const signUp = (email = uniqueEmail(), password = PASSWORD) =>
  Effect.map(post("/api/v1/auth/sign-up", { email, password }), (reply) => ({ ...signedInOf(reply, 201), email }))

export const signIn = (email: string, password = PASSWORD, cookie?: string) =>
  Effect.map(post("/api/v1/auth/sign-in", { email, password }, cookie === undefined ? {} : { cookie }), (reply) =>
    signedInOf(reply, 200)
  )

/** A call under the session, with the console's Origin and CSRF token unless `omit` says which to leave out. */
export const under = (
  who: SignedIn,
  path: string,
  init: RequestInit & { readonly omit?: ReadonlyArray<"origin" | "csrf">; readonly origin?: string } = {}
) => {
  const { omit = [], origin = PUBLIC_BASE_URL, headers, ...rest } = init
  return call(path, {
    ...rest,
    headers: {
      cookie: who.cookie,
      ...(omit.includes("origin") ? {} : { origin }),
      ...(omit.includes("csrf") ? {} : { "x-csrf-token": who.csrfToken }),
      ...(headers as Record<string, string> | undefined)
    }
  })
}
