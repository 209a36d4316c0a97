import { Effect } from "effect"
import { describe, expect } from "@effect/vitest"
import { AccountStore } from "../accounts/AccountStore.ts"
import * as Ids from "../domain/Ids.ts"
import type { Case } from "./Case.ts"
import { at, defined, makeAccount, makeKey, T0 } from "./Fixtures.ts"

export const accountStoreCases = (test: Case) =>
  describe("AccountStore", () => {
    test(
      "creates, reads and lists accounts",
      Effect.gen(function* () {
        const store = yield* AccountStore
        const a = yield* makeAccount("alpha")
        const b = yield* makeAccount("beta")
        expect(a.name).toBe("alpha")
        expect(yield* store.getAccount(a.id)).toEqual(a)
        expect(yield* store.getAccount(Ids.makeAccountId())).toBeUndefined()
        const listed = yield* store.listAccounts
        expect(listed.map((account) => account.id).sort()).toEqual([a.id, b.id].sort())
      })
    )

    test(
      "keeps API keys per account and revokes them once",
      Effect.gen(function* () {
        const store = yield* AccountStore
        const a = yield* makeAccount("alpha")
        const b = yield* makeAccount("beta")
        const key = makeKey(a.id, { name: "ci", rateLimitPerMinute: 30, usageLimit: 5, scopes: ["jobs:read"] })
        yield* store.insertApiKey(key)
        yield* store.insertApiKey(makeKey(b.id))
        expect(yield* store.listApiKeys(a.id)).toEqual([key])

        expect(yield* store.revokeApiKey(b.id, key.id, at(5))).toBe(false)
        expect(yield* store.revokeApiKey(a.id, Ids.makeApiKeyId(), at(5))).toBe(false)
        expect((yield* store.listApiKeys(a.id))[0]?.revokedAt).toBeNull()

        expect(yield* store.revokeApiKey(a.id, key.id, at(10))).toBe(true)
        expect(yield* store.revokeApiKey(a.id, key.id, at(20))).toBe(true)
        expect((yield* store.listApiKeys(a.id))[0]?.revokedAt).toEqual(at(10))
      })
    )

    test(
      "authenticate finds a key by hash and counts requests in a one-minute window",
      Effect.gen(function* () {
        const store = yield* AccountStore
        const account = yield* makeAccount()
        const key = makeKey(account.id)
        const other = makeKey(account.id)
        yield* store.insertApiKey(key)
        yield* store.insertApiKey(other)

        expect(yield* store.authenticate("0".repeat(64), T0)).toBeUndefined()

        const first = defined(yield* store.authenticate(key.hash, T0))
        expect(first.key.id).toBe(key.id)
        expect(first.requestsInWindow).toBe(1)
        expect(first.windowResetsAt).toEqual(at(60))

        const second = defined(yield* store.authenticate(key.hash, at(30)))
        expect(second.requestsInWindow).toBe(2)
        expect(second.windowResetsAt).toEqual(at(60))

        // Each key counts on its own.
        expect(defined(yield* store.authenticate(other.hash, at(31))).requestsInWindow).toBe(1)

        const later = defined(yield* store.authenticate(key.hash, at(61)))
        expect(later.requestsInWindow).toBe(1)
        expect(later.windowResetsAt).toEqual(at(121))
      })
    )

    test(
      "authenticate returns revoked keys so the caller can say why",
      Effect.gen(function* () {
        const store = yield* AccountStore
        const account = yield* makeAccount()
        const key = makeKey(account.id)
        yield* store.insertApiKey(key)
        yield* store.revokeApiKey(account.id, key.id, at(1))
        const found = defined(yield* store.authenticate(key.hash, at(2)))
        expect(found.key.revokedAt).toEqual(at(1))
      })
    )
  })
