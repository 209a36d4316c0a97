/**
 * The chat routes take a console session in place of an API key, as every /api/v1 endpoint does:
 * reads with the cookie alone, a completion with the Origin and X-CSRF-Token too.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { LedgerStore } from "@taskmeter/kernel"
import type { Ids } from "@taskmeter/kernel"
import * as Console from "../support/Console.ts"
import * as T from "./ChatTestServer.ts"

const completion = JSON.stringify({ model: "taskmeter-local", messages: [{ role: "user", content: "Say hello." }] })

layer(T.layer(), { excludeTestServices: true })("chat under a console session", (it) => {
  it.effect("answers a completion under the session, refuses one without the CSRF token, and lists it", () =>
    Effect.gen(function* () {
      const base = yield* T.baseUrl
      const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
        T.call(path, undefined, {
          method: "POST",
          headers: { "content-type": "application/json", origin: "http://taskmeter.test", ...headers },
          body: typeof body === "string" ? body : JSON.stringify(body)
        })
      const email = Console.uniqueEmail()
      const signedUp = yield* post("/api/v1/auth/sign-up", { email, password: Console.PASSWORD })
      expect(signedUp.status).toBe(201)
      const cookie = Console.sessionSetCookie(signedUp.headers)!.split(";")[0]!
      const csrf = (signedUp.body as { csrfToken: string }).csrfToken
      yield* LedgerStore.LedgerStore.use((ledger) =>
        ledger.grant({
          accountId: (signedUp.body as { account: { id: Ids.AccountId } }).account.id,
          amountMicros: 1_000_000,
          note: "test"
        })
      )
      const refused = yield* post("/api/v1/chat/completions", completion, { cookie })
      expect([refused.status, (refused.body as { code: string }).code]).toEqual([403, "CSRF_REJECTED"])
      const answered = yield* post("/api/v1/chat/completions", completion, { cookie, "x-csrf-token": csrf })
      expect(answered.status, JSON.stringify(answered.body)).toBe(200)
      const list = Effect.promise(async () => {
        const response = await fetch(`${base}/api/v1/chat/requests`, { headers: { cookie } })
        return { status: response.status, body: (await response.json()) as { requests: Array<unknown> } }
      })
      const listed = yield* T.eventually(list, (reply) => reply.body.requests.length === 1)
      expect(listed.status).toBe(200)
    })
  )
})
