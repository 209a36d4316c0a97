/**
 * The notice of a disabled webhook endpoint reaches the account's users: an endpoint failing past
 * the disable-after time is disabled by the delivery worker, and the account's verified users
 * (owners first) are mailed through the server's Mailer; an unverified member is not.
 */
import { describe, expect, layer } from "@effect/vitest"
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { Accounts, Ids, LedgerStore, Mailer, Money, UserStore, WebhookDelivery, WebhookStore } from "@taskmeter/kernel"
import * as C from "./support/Console.ts"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

for (const store of stores) {
  const mail = Mailer.makeMemory()
  layer(T.layer(store, { mail }), { excludeTestServices: true })(`webhook endpoint notices over ${store.name}`, (it) => {
    describe("an endpoint disabled after continuous failure", () => {
      it.effect("mails the account's verified owner through the server's mailer", () =>
        Effect.gen(function* () {
          const ownerEmail = C.uniqueEmail("owner")
          const signedUp = yield* C.post("/api/v1/auth/sign-up", { email: ownerEmail, password: C.PASSWORD })
          const accountId = signedUp.body.account.id as Ids.AccountId
          const users = yield* UserStore.UserStore
          yield* users.markVerified(signedUp.body.user.id, new Date())
          const memberEmail = C.uniqueEmail("member")
          const member = Ids.makeUserId()
          yield* users.insertUser(
            { id: member, email: memberEmail, emailVerifiedAt: null, passwordHash: null, operator: false, createdAt: new Date() },
            { accountId, userId: member, role: "member", createdAt: new Date() }
          )
          const key = yield* (yield* Accounts.Accounts).createKey(accountId)
          const who = { accountId, keyId: key.record.id, secret: key.secret }
          yield* (yield* LedgerStore.LedgerStore).grant({ accountId, amountMicros: Money.micros(10_000_000), note: "test" })
          // Stored directly: a loopback URL the outbound policy refuses, so every attempt fails.
          const endpoint = yield* (yield* WebhookStore.WebhookStore).createEndpoint({
            id: `whep_${randomUUID()}`,
            accountId,
            url: "https://127.0.0.1/hook",
            events: ["task.succeeded"],
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            now: new Date()
          })
          const submitted = yield* T.submit(who)
          yield* T.succeedWithResult(who, submitted.body.id, T.PNG)
          const before = mail.sent.length
          expect(yield* WebhookDelivery.deliverDue({ disableAfterMs: 0 })).toBeGreaterThanOrEqual(1)
          const notices = mail.sent.slice(before).filter((m) => m.subject === "A taskmeter webhook endpoint was disabled")
          expect(notices.map((m) => m.to)).toEqual([ownerEmail])
          expect(notices[0]!.text).toContain(endpoint.id)
          const read = yield* T.call(`/api/v1/webhook-endpoints/${endpoint.id}`, { headers: T.bearer(who.secret) })
          expect(read.body.enabled).toBe(false)
        })
      )
    })
  })
}
