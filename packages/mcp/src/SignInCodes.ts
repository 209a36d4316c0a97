/**
 * One-time sign-in codes: how an account owner signs in on the sign-in page without pasting an API
 * key. The operator makes one (`create(accountId)`, through `taskmeter admin`) and hands it over; it
 * works once, for ten minutes by default, and grants every scope the MCP tools use.
 */
import { Clock, Effect } from "effect"
import { Accounts } from "@taskmeter/kernel"
import type { Ids, StoreError } from "@taskmeter/kernel"
import { OAuthStore } from "./OAuthStore.ts"
import { newSecret, PREFIX, sha256Hex } from "./internal/Secrets.ts"

export const DEFAULT_TTL_SECONDS = 600

export const create = (
  accountId: Ids.AccountId,
  options: { readonly ttlSeconds?: number | undefined } = {}
): Effect.Effect<
  { readonly code: string; readonly expiresAt: Date },
  Accounts.AccountNotFound | StoreError.StoreUnavailable,
  OAuthStore | Accounts.Accounts
> =>
  Effect.gen(function* () {
    yield* (yield* Accounts.Accounts).get(accountId)
    const now = yield* Clock.currentTimeMillis
    const code = newSecret(PREFIX.signInCode)
    const expiresAt = new Date(now + (options.ttlSeconds ?? DEFAULT_TTL_SECONDS) * 1000)
    yield* (yield* OAuthStore).insertSignInCode({ hash: sha256Hex(code), accountId, createdAt: new Date(now), expiresAt })
    return { code, expiresAt }
  })
