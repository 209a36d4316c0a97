/**
 * The console's API keys (session only) and the sign-up policy: open with starting credits, or by
 * invitation only.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Money, Users } from "@taskmeter/kernel"
import * as C from "./support/Console.ts"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const createKey = (who: C.SignedIn, body: unknown) =>
  C.under(who, "/api/v1/keys", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

for (const store of stores) {
  layer(T.layer(store, { consoleAuth: { signUpCreditsMicros: Money.micros(2_000_000) } }), { excludeTestServices: true })(
    `console API keys over ${store.name}`,
    (it) => {
      describe("keys", () => {
        it.effect("creates a key with name, scopes and limits, shows the secret once, lists it without, and revokes it", () =>
          Effect.gen(function* () {
            const who = yield* C.signUp()
            const created = yield* createKey(who, {
              name: "ci",
              scopes: ["jobs:read", "usage:read"],
              rateLimitPerMinute: 30,
              usageLimit: 100
            })
            expect(created.status).toBe(201)
            expect(created.body.secret).toMatch(/^tm_[A-Za-z0-9_-]{43}$/)
            expect(created.body.key).toEqual({
              id: expect.stringMatching(/^key_/),
              name: "ci",
              displayPrefix: created.body.secret.slice(0, 7),
              scopes: ["jobs:read", "usage:read"],
              rateLimitPerMinute: 30,
              usageLimit: 100,
              usageCount: 0,
              createdAt: expect.any(String),
              revokedAt: null
            })
            const secret: string = created.body.secret
            // The key works on the API, for its account, with its scopes.
            const usage = yield* T.call("/api/v1/usage", { headers: T.bearer(secret) })
            expect([usage.status, usage.body.balanceMicros]).toEqual([200, 2_000_000])
            expect((yield* T.call("/api/v1/jobs", { method: "POST", headers: T.bearer(secret) })).body.code).toBe(
              "INSUFFICIENT_SCOPE"
            )
            const list = yield* C.under(who, "/api/v1/keys")
            expect(list.status).toBe(200)
            expect(list.body.data.map((key: { id: string }) => key.id)).toEqual([created.body.key.id])
            expect(list.text).not.toContain(secret)
            const revoked = yield* C.under(who, `/api/v1/keys/${created.body.key.id}`, { method: "DELETE" })
            expect(revoked.status).toBe(204)
            expect((yield* T.call("/api/v1/usage", { headers: T.bearer(secret) })).body.code).toBe("PERMISSION_DENIED")
            expect((yield* C.under(who, "/api/v1/keys")).body.data[0].revokedAt).not.toBeNull()
          })
        )

        it.effect("a key of another account, or no key, is 404 REQUEST_NOT_FOUND; bad bodies are INVALID_REQUEST", () =>
          Effect.gen(function* () {
            const who = yield* C.signUp()
            const other = yield* T.customer()
            for (const id of [other.keyId, "key_nonsense"]) {
              const reply = yield* C.under(who, `/api/v1/keys/${id}`, { method: "DELETE" })
              expect([reply.status, reply.body.code]).toEqual([404, "REQUEST_NOT_FOUND"])
            }
            expect((yield* T.call("/api/v1/usage", { headers: T.bearer(other.secret) })).status).toBe(200)
            for (const body of [
              { name: "", scopes: ["jobs:read"] },
              { name: "   ", scopes: ["jobs:read"] },
              { name: "bell\u0007", scopes: ["jobs:read"] },
              { name: "x", scopes: ["admin"] },
              { name: "x", scopes: [] }
            ]) {
              const reply = yield* createKey(who, body)
              expect([reply.status, reply.body.code], JSON.stringify(body)).toEqual([400, "INVALID_REQUEST"])
            }
          })
        )

        it.effect("an API key cannot list, make or revoke keys: 403 PERMISSION_DENIED; without a session 401", () =>
          Effect.gen(function* () {
            const who = yield* T.customer()
            for (const [method, path] of [
              ["GET", "/api/v1/keys"],
              ["POST", "/api/v1/keys"],
              ["DELETE", `/api/v1/keys/${who.keyId}`]
            ] as const) {
              const reply = yield* T.call(path, {
                method,
                headers: { ...T.bearer(who.secret), "content-type": "application/json" },
                ...(method === "POST" ? { body: JSON.stringify({ name: "x", scopes: ["jobs:read"] }) } : {})
              })
              expect([reply.status, reply.body.code], `${method} ${path}`).toEqual([403, "PERMISSION_DENIED"])
              expect((yield* T.call(path, { method })).status).toBe(401)
            }
          })
        )

        it.effect("sign-up grants the starting credits as one ledger entry", () =>
          Effect.gen(function* () {
            const who = yield* C.signUp()
            const usage = yield* C.under(who, "/api/v1/usage")
            expect(
              usage.body.entries.map((entry: { kind: string; amountMicros: number }) => [entry.kind, entry.amountMicros])
            ).toEqual([["grant", 2_000_000]])
          })
        )
      })
    }
  )
}

layer(T.layer(stores[0]!, { consoleAuth: { signUp: "invite" } }), { excludeTestServices: true })(
  "console sign-up by invitation",
  (it) => {
    it.effect("refuses sign-up without an invitation, takes one for its email once, and one into an account makes a member", () =>
      Effect.gen(function* () {
        const users = yield* Users.Users
        const email = C.uniqueEmail("invited")
        const refused = yield* C.post("/api/v1/auth/sign-up", { email, password: C.PASSWORD })
        expect([refused.status, refused.body.code]).toEqual([403, "PERMISSION_DENIED"])
        expect(refused.body.error).toContain("invitation")

        const invitation = yield* users.invite({ email })
        expect(invitation.link).toMatch(/^http:\/\/taskmeter\.test\/sign-up\?invitation=[A-Za-z0-9_-]{43}$/)
        const token = new URL(invitation.link).searchParams.get("invitation")!
        const otherEmail = yield* C.post("/api/v1/auth/sign-up", {
          email: C.uniqueEmail(),
          password: C.PASSWORD,
          invitation: token
        })
        expect([otherEmail.status, otherEmail.body.code]).toEqual([400, "INVALID_REQUEST"])
        const again = yield* users.invite({ email })
        const againToken = new URL(again.link).searchParams.get("invitation")!
        const owner = yield* C.post("/api/v1/auth/sign-up", {
          email: email.toUpperCase(),
          password: C.PASSWORD,
          invitation: againToken
        })
        expect([owner.status, owner.body.user.role]).toEqual([201, "owner"])
        const reused = yield* C.post("/api/v1/auth/sign-up", {
          email: C.uniqueEmail(),
          password: C.PASSWORD,
          invitation: againToken
        })
        expect([reused.status, reused.body.code]).toEqual([400, "INVALID_REQUEST"])

        const memberEmail = C.uniqueEmail("member")
        const intoAccount = yield* users.invite({ email: memberEmail, accountId: owner.body.account.id })
        const member = yield* C.post("/api/v1/auth/sign-up", {
          email: memberEmail,
          password: C.PASSWORD,
          invitation: new URL(intoAccount.link).searchParams.get("invitation")
        })
        expect([member.status, member.body.user.role, member.body.account.id]).toEqual([201, "member", owner.body.account.id])
      })
    )
  }
)
