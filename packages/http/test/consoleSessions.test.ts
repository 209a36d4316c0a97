/**
 * The console's sessions over HTTP: sign-up and sign-in set the cookie with its flags, a session
 * stands in for an API key on the API (scoped to its account), CSRF is refused, planted session
 * ids do not survive sign-in, sessions end (idle, absolute, revoked), and failed sign-ins are
 * throttled with uniform answers.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { IpNetwork } from "effect/net"
import { LedgerStore, Mailer } from "@taskmeter/kernel"
import type { Ids } from "@taskmeter/kernel"
import * as C from "./support/Console.ts"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const jobBody = JSON.stringify({ model: T.MODEL, input: T.INPUT })

/** POST /api/v1/jobs under the session, leaving out what `omit` says. */
const submitUnder = (who: C.SignedIn, omit: ReadonlyArray<"origin" | "csrf"> = [], origin?: string) =>
  C.under(who, "/api/v1/jobs", {
    method: "POST",
    omit,
    ...(origin === undefined ? {} : { origin }),
    headers: { "content-type": "application/json", "idempotency-key": crypto.randomUUID() },
    body: jobBody
  })

const sessionOf = (who: C.SignedIn) => C.under(who, "/api/v1/auth/session")

for (const store of stores) {
  const mail = Mailer.makeMemory()
  layer(T.layer(store, { mail, consoleAuth: { maxFailuresPerEmail: 3 } }), { excludeTestServices: true })(
    `console sessions over ${store.name}`,
    (it) => {
      describe("sign-up and the cookie", () => {
        it.effect("signs up into an account of one's own, sets the cookie with its flags, and mails a verification link", () =>
          Effect.gen(function* () {
            const email = C.uniqueEmail("Ada")
            const reply = yield* C.post("/api/v1/auth/sign-up", { email, password: C.PASSWORD })
            expect(reply.status).toBe(201)
            expect(reply.body.user).toEqual({
              id: expect.stringMatching(/^user_/),
              email,
              emailVerified: false,
              role: "owner",
              operator: false
            })
            expect(reply.body.account.id).toMatch(/^acct_/)
            const cookie = C.sessionSetCookie(reply.headers)!
            expect(cookie).toMatch(/^taskmeter_session=[A-Za-z0-9_-]{43};/)
            expect(cookie).toContain("HttpOnly")
            expect(cookie).toContain("SameSite=Lax")
            expect(cookie).toContain("Path=/")
            expect(cookie).toMatch(/Max-Age=\d+/)
            expect(cookie).not.toContain("Secure")

            const message = mail.sent.findLast((sent) => sent.to === email)!
            const link = /http:\/\/taskmeter\.test\/verify-email\?token=([A-Za-z0-9_%-]+)/.exec(message.text)
            expect(link).not.toBeNull()
            const who = {
              cookie: cookie.split(";")[0]!,
              setCookie: cookie,
              csrfToken: reply.body.csrfToken,
              accountId: "",
              userId: ""
            }
            expect((yield* C.post("/api/v1/auth/verify-email", { token: decodeURIComponent(link![1]!) })).status).toBe(204)
            expect((yield* sessionOf(who)).body.user.emailVerified).toBe(true)
            const again = yield* C.post("/api/v1/auth/verify-email", { token: decodeURIComponent(link![1]!) })
            expect([again.status, again.body.code]).toEqual([400, "INVALID_REQUEST"])
          })
        )

        it.effect("refuses a taken email in any case (EMAIL_TAKEN), a short password and a malformed email", () =>
          Effect.gen(function* () {
            const who = yield* C.signUp()
            const taken = yield* C.post("/api/v1/auth/sign-up", { email: who.email.toUpperCase(), password: C.PASSWORD })
            expect([taken.status, taken.body.code]).toEqual([409, "EMAIL_TAKEN"])
            const short = yield* C.post("/api/v1/auth/sign-up", { email: C.uniqueEmail(), password: "short" })
            expect([short.status, short.body.code]).toEqual([400, "INVALID_REQUEST"])
            expect(short.body.error).toContain("at least 10")
            const malformed = yield* C.post("/api/v1/auth/sign-up", { email: "nobody", password: C.PASSWORD })
            expect([malformed.status, malformed.body.code]).toEqual([400, "INVALID_REQUEST"])
          })
        )

        it.effect("answers the session, and 401 AUTH_REQUIRED without one", () =>
          Effect.gen(function* () {
            const who = yield* C.signUp()
            const reply = yield* sessionOf(who)
            expect(reply.status).toBe(200)
            expect(reply.body).toEqual({
              user: { id: who.userId, email: who.email, emailVerified: false, role: "owner", operator: false },
              account: { id: who.accountId },
              csrfToken: who.csrfToken
            })
            const none = yield* T.call("/api/v1/auth/session")
            expect([none.status, none.body.code]).toEqual([401, "AUTH_REQUIRED"])
          })
        )
      })

      describe("a session in place of an API key", () => {
        it.effect("submits, lists and reads usage with the same bodies; another account's task is 404", () =>
          Effect.gen(function* () {
            const who = yield* C.signUp()
            const other = yield* T.customer()
            const theirs = yield* T.submit(other)
            expect(theirs.status).toBe(202)
            // An account without credits is refused as a key's would be.
            const poor = yield* submitUnder(who)
            expect([poor.status, poor.body.code]).toEqual([409, "INSUFFICIENT_CREDITS"])
            yield* LedgerStore.LedgerStore.use((ledger) =>
              ledger.grant({ accountId: who.accountId as Ids.AccountId, amountMicros: 1_000_000, note: "test" })
            )
            const submitted = yield* submitUnder(who)
            expect([submitted.status, submitted.body.status]).toEqual([202, "queued"])
            const list = yield* C.under(who, "/api/v1/jobs")
            expect([list.status, list.body.data.map((task: { id: string }) => task.id)]).toEqual([200, [submitted.body.id]])
            const usage = yield* C.under(who, "/api/v1/usage")
            expect([usage.status, usage.body.availableMicros]).toEqual([200, 1_000_000 - T.MODEL_PRICE])
            const foreign = yield* C.under(who, `/api/v1/jobs/${theirs.body.id}`)
            expect([foreign.status, foreign.body.code]).toEqual([404, "JOB_NOT_FOUND"])
            const foreignCancel = yield* C.under(who, `/api/v1/jobs/${theirs.body.id}/cancel`, { method: "POST" })
            expect([foreignCancel.status, foreignCancel.body.code]).toEqual([404, "JOB_NOT_FOUND"])
          })
        )

        it.effect("an API key header wins over the cookie", () =>
          Effect.gen(function* () {
            const who = yield* C.signUp()
            const reply = yield* C.under(who, "/api/v1/jobs", { headers: { "x-api-key": "tm_unknown" } })
            expect([reply.status, reply.body.code]).toEqual([401, "AUTH_REQUIRED"])
          })
        )
      })

      describe("CSRF", () => {
        it.effect("refuses an unsafe request without Origin, with another Origin, or without the token: 403 CSRF_REJECTED", () =>
          Effect.gen(function* () {
            const who = yield* C.signUp()
            for (const [omit, origin] of [
              [["origin"], undefined],
              [[], "https://evil.example"],
              [["csrf"], undefined],
              [["origin", "csrf"], undefined]
            ] as const) {
              const reply = yield* submitUnder(who, omit, origin)
              expect([reply.status, reply.body.code], JSON.stringify({ omit, origin })).toEqual([403, "CSRF_REJECTED"])
            }
            const wrongToken = yield* C.under(who, "/api/v1/jobs", {
              method: "POST",
              headers: { "content-type": "application/json", "idempotency-key": "k", "x-csrf-token": "forged" },
              body: jobBody
            })
            expect(wrongToken.body.code).toBe("CSRF_REJECTED")
            expect(wrongToken.body.error).toContain("X-CSRF-Token")
            // Reads need neither.
            expect((yield* C.under(who, "/api/v1/jobs", { omit: ["origin", "csrf"] })).status).toBe(200)
            const revoke = yield* C.under(who, "/api/v1/auth/sign-out", { method: "POST", omit: ["csrf"] })
            expect(revoke.body.code).toBe("CSRF_REJECTED")
          })
        )

        it.effect("sign-in and sign-up need the console's Origin", () =>
          Effect.gen(function* () {
            const who = yield* C.signUp()
            const noOrigin = yield* C.post(
              "/api/v1/auth/sign-in",
              { email: who.email, password: C.PASSWORD },
              { origin: undefined }
            )
            expect([noOrigin.status, noOrigin.body.code]).toEqual([403, "CSRF_REJECTED"])
            expect(noOrigin.body.error).toContain("Origin: http://taskmeter.test")
            const foreign = yield* C.post(
              "/api/v1/auth/sign-up",
              { email: C.uniqueEmail(), password: C.PASSWORD },
              { origin: "https://evil.example" }
            )
            expect([foreign.status, foreign.body.code]).toEqual([403, "CSRF_REJECTED"])
            expect(C.sessionSetCookie(foreign.headers)).toBeUndefined()
          })
        )
      })

      describe("session ids", () => {
        it.effect("a session id presented before sign-in does not survive it", () =>
          Effect.gen(function* () {
            const victim = yield* C.signUp()
            const attacker = yield* C.signUp()
            const planted = ["taskmeter_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", attacker.cookie]
            for (const cookie of planted) {
              const signedIn = yield* C.signIn(victim.email, C.PASSWORD, cookie)
              expect(signedIn.cookie).not.toBe(cookie)
              expect((yield* sessionOf(signedIn)).body.user.id).toBe(victim.userId)
              const old = yield* sessionOf({ ...signedIn, cookie })
              expect([old.status, old.body.code]).toEqual([401, "AUTH_REQUIRED"])
            }
          })
        )

        it.effect("sign-out ends this session; sign-out-everywhere ends every one of the user", () =>
          Effect.gen(function* () {
            const who = yield* C.signUp()
            const second = yield* C.signIn(who.email)
            const third = yield* C.signIn(who.email)
            const out = yield* C.under(who, "/api/v1/auth/sign-out", { method: "POST" })
            expect(out.status).toBe(204)
            expect(C.sessionSetCookie(out.headers)).toMatch(/^taskmeter_session=;.*(Max-Age=0|Expires=Thu, 01 Jan 1970)/)
            expect((yield* sessionOf(who)).status).toBe(401)
            expect((yield* sessionOf(second)).status).toBe(200)
            expect((yield* C.under(second, "/api/v1/auth/sign-out-everywhere", { method: "POST" })).status).toBe(204)
            for (const each of [second, third]) {
              const reply = yield* C.under(each, "/api/v1/jobs")
              expect([reply.status, reply.body.code]).toEqual([401, "AUTH_REQUIRED"])
              expect(reply.body.error).toContain("sign in again")
            }
          })
        )
      })

      describe("brute force", () => {
        it.effect("answers a wrong password and an unknown email alike, then throttles the email whatever the password", () =>
          Effect.gen(function* () {
            const who = yield* C.signUp()
            const wrong = yield* C.post("/api/v1/auth/sign-in", { email: who.email, password: "wrong password 1" })
            const unknown = yield* C.post("/api/v1/auth/sign-in", {
              email: C.uniqueEmail("nobody"),
              password: "wrong password 1"
            })
            expect([wrong.status, wrong.body]).toEqual([unknown.status, unknown.body])
            expect([wrong.status, wrong.body.code]).toEqual([401, "AUTH_REQUIRED"])
            yield* C.post("/api/v1/auth/sign-in", { email: who.email, password: "wrong password 2" })
            yield* C.post("/api/v1/auth/sign-in", { email: who.email.toUpperCase(), password: "wrong password 3" })
            const right = yield* C.post("/api/v1/auth/sign-in", { email: who.email, password: C.PASSWORD })
            expect([right.status, right.body.code]).toEqual([429, "RATE_LIMITED"])
            expect(Number(right.headers.get("retry-after"))).toBeGreaterThan(0)
            expect(C.sessionSetCookie(right.headers)).toBeUndefined()
            const nobody = C.uniqueEmail("nobody")
            for (let i = 0; i < 3; i++) yield* C.post("/api/v1/auth/sign-in", { email: nobody, password: "x" })
            const throttledUnknown = yield* C.post("/api/v1/auth/sign-in", { email: nobody, password: "x" })
            expect([throttledUnknown.status, throttledUnknown.body]).toEqual([right.status, right.body])
          })
        )
      })
    }
  )
}

layer(
  T.layer(stores[0]!, {
    consoleAuth: { publicBaseUrl: "https://console.example", sessions: { idleTimeoutMs: 1_000, maxAgeMs: 2_500 } }
  }),
  { excludeTestServices: true }
)("console sessions under an https public URL with short lifetimes", (it) => {
  const https = { origin: "https://console.example" }
  const signedUp = Effect.gen(function* () {
    const reply = yield* C.post("/api/v1/auth/sign-up", { email: C.uniqueEmail(), password: C.PASSWORD }, https)
    expect(reply.status).toBe(201)
    const setCookie = C.sessionSetCookie(reply.headers)!
    return { cookie: setCookie.split(";")[0]!, setCookie, csrfToken: reply.body.csrfToken, accountId: "", userId: "" }
  })
  const alive = (who: C.SignedIn) => Effect.map(sessionOf(who), (reply) => reply.status)

  it.effect("marks the cookie Secure, and takes the https Origin", () =>
    Effect.gen(function* () {
      const who = yield* signedUp
      expect(who.setCookie).toContain("Secure")
      const out = yield* C.under(who, "/api/v1/auth/sign-out", { method: "POST", origin: https.origin })
      expect(out.status).toBe(204)
    })
  )

  it.effect("ends a session left idle, and one in use at its absolute end", () =>
    Effect.gen(function* () {
      const idle = yield* signedUp
      const busy = yield* signedUp
      for (let i = 0; i < 4; i++) {
        yield* Effect.sleep("500 millis")
        expect(yield* alive(busy)).toBe(200)
      }
      expect(yield* alive(idle)).toBe(401)
      yield* Effect.sleep("600 millis")
      expect(yield* alive(busy)).toBe(401)
    })
  )
})

layer(T.layer(stores[0]!, { consoleAuth: { maxFailuresPerEmail: 1 } }), { excludeTestServices: true })(
  "console sign-in throttled per client address",
  (it) => {
    it.effect("refuses any email from an address past ten times the per-email failures", () =>
      Effect.gen(function* () {
        const who = yield* C.signUp()
        for (let i = 0; i < 10; i++) {
          const reply = yield* C.post("/api/v1/auth/sign-in", { email: C.uniqueEmail("guess"), password: "wrong password" })
          expect(reply.body.code).toBe("AUTH_REQUIRED")
        }
        const right = yield* C.post("/api/v1/auth/sign-in", { email: who.email, password: C.PASSWORD })
        expect([right.status, right.body.code]).toEqual([429, "RATE_LIMITED"])
      })
    )
  }
)

layer(
  T.layer(stores[0]!, { consoleAuth: { maxFailuresPerEmail: 1 }, trustedProxies: [IpNetwork.fromStringUnsafe("127.0.0.0/8")] }),
  { excludeTestServices: true }
)("console sign-in throttled per client behind a trusted proxy", (it) => {
  const signInFrom = (forwardedFor: string, email: string, password: string) =>
    T.call("/api/v1/auth/sign-in", {
      method: "POST",
      headers: { "content-type": "application/json", origin: T.PUBLIC_BASE_URL, "x-forwarded-for": forwardedFor },
      body: JSON.stringify({ email, password })
    })

  it.effect("counts the client X-Forwarded-For names, an IPv6 client by its /64, as MCP's limits do", () =>
    Effect.gen(function* () {
      const who = yield* C.signUp()
      for (const [i, client] of ["2001:db8:aa:bb::1", "203.0.113.9"].entries()) {
        for (let n = 0; n < 10; n++) {
          // The IPv6 client moves around its /64: still one client.
          const from = i === 0 ? `2001:db8:aa:bb::${n + 1}` : client
          const reply = yield* signInFrom(from, C.uniqueEmail("guess"), "wrong password")
          expect(reply.body.code).toBe("AUTH_REQUIRED")
        }
      }
      for (const client of ["2001:db8:aa:bb:ffff::9", "203.0.113.9"]) {
        const refused = yield* signInFrom(client, who.email, C.PASSWORD)
        expect([refused.status, refused.body.code], client).toEqual([429, "RATE_LIMITED"])
      }
      // Another client behind the same proxy, and the proxy itself, are not held back.
      for (const client of ["198.51.100.7", "2001:db8:aa:bc::1"]) {
        const right = yield* signInFrom(client, who.email, C.PASSWORD)
        expect(right.status, client).toBe(200)
      }
      expect((yield* C.post("/api/v1/auth/sign-in", { email: who.email, password: C.PASSWORD })).status).toBe(200)
    })
  )
})

layer(T.layer(stores[0]!, { consoleAuth: { maxFailuresPerEmail: 2 } }), { excludeTestServices: true })(
  "console passkey sign-in throttled",
  (it) => {
    it.effect("refuses a credential past its failures with Retry-After, before looking at it, and keeps credentials apart", () =>
      Effect.gen(function* () {
        const attempt = (id: string) =>
          C.post("/api/v1/auth/passkeys/sign-in", { response: { id, rawId: id, type: "public-key", response: {} } })
        for (let i = 0; i < 2; i++) expect((yield* attempt("credential-a")).body.code).toBe("AUTH_REQUIRED")
        const refused = yield* attempt("credential-a")
        expect([refused.status, refused.body.code]).toEqual([429, "RATE_LIMITED"])
        expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
        expect((yield* attempt("credential-b")).body.code).toBe("AUTH_REQUIRED")
      })
    )
  }
)
