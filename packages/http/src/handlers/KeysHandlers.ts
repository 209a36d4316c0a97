/** The keys group: the signed-in account's API keys through the kernel's Accounts (as the admin CLI makes them). */
import { Effect, Schema } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Accounts, Errors, Ids } from "@taskmeter/kernel"
import type { AccountStore } from "@taskmeter/kernel"
import { Api } from "../Api.ts"
import type { ApiKey } from "../api/KeysApi.ts"
import { CurrentSession } from "../api/SessionSecurity.ts"
import { toApiUnavailable } from "./StoreFailures.ts"

export const keyView = (record: AccountStore.ApiKeyRecord): ApiKey => ({
  id: record.id,
  name: record.name,
  displayPrefix: record.displayPrefix,
  scopes: record.scopes,
  rateLimitPerMinute: record.rateLimitPerMinute,
  usageLimit: record.usageLimit,
  usageCount: record.usageCount,
  createdAt: record.createdAt.toISOString(),
  revokedAt: record.revokedAt?.toISOString() ?? null
})

const isApiKeyId = Schema.is(Ids.ApiKeyId)

const notFound = (id: string) =>
  new Errors.RequestNotFound({ message: `This account has no API key ${JSON.stringify(id)}; GET /api/v1/keys lists its keys.` })

export const layer = HttpApiBuilder.group(Api, "keys", (handlers) =>
  Effect.gen(function* () {
    const accounts = yield* Accounts.Accounts
    const accountOf = Effect.map(CurrentSession, ({ live }) => live.record.accountId)
    return handlers
      .handle("list", () =>
        Effect.gen(function* () {
          const keys = yield* accounts.listKeys(yield* accountOf)
          return {
            data: [...keys].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime()).map(keyView)
          }
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const created = yield* accounts.createKey(yield* accountOf, payload)
          return { key: keyView(created.record), secret: created.secret }
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable), Effect.catchTag("AccountNotFound", Effect.die))
      )
      .handle("revoke", ({ params }) =>
        Effect.gen(function* () {
          if (!isApiKeyId(params.id)) return yield* notFound(params.id)
          const revoked = yield* accounts.revokeKey(yield* accountOf, params.id)
          if (!revoked) return yield* notFound(params.id)
        }).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
  })
)
