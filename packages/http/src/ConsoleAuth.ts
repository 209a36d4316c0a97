/**
 * The console's users and sessions as the server runs them: the kernel's Sessions and Users with
 * the sign-up policy and session lifetimes from the settings, and the SessionSettings the cookie
 * and the CSRF check use. Wiring only.
 */
import { Layer } from "effect"
import { Sessions, Users } from "@taskmeter/kernel"
import type { Money } from "@taskmeter/kernel"
import * as SessionCookie from "./SessionCookie.ts"

export interface Options {
  readonly publicBaseUrl: string
  /** SIGNUP: `open` (anyone) or `invite` (an invitation link from `taskmeter admin invite`). */
  readonly signUp: Users.SignUpPolicy
  /** SIGNUP_CREDITS_MICROS: credits granted to each account made at sign-up. */
  readonly signUpCreditsMicros: Money.Micros
  readonly sessions?: Sessions.Options | undefined
  /** Failed sign-ins per email in 15 minutes (ten times as many per client address). */
  readonly maxFailuresPerEmail?: number | undefined
}

export const layer = (options: Options) => {
  const sessions = options.sessions ?? Sessions.defaultOptions
  return Layer.mergeAll(
    Users.layer({
      publicBaseUrl: options.publicBaseUrl,
      signUp: options.signUp,
      signUpCreditsMicros: options.signUpCreditsMicros,
      maxFailuresPerEmail: options.maxFailuresPerEmail
    }),
    SessionCookie.layer({ publicBaseUrl: options.publicBaseUrl, maxAgeMs: sessions.maxAgeMs })
  ).pipe(Layer.provideMerge(Sessions.layer(sessions)))
}
