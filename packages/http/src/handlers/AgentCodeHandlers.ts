/**
 * The agentCodes group: SignInCodes.create for the session's account (the one implementation the
 * admin service uses too), and the MCP endpoint's URL under the public base URL.
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Accounts, Errors } from "@taskmeter/kernel"
import { McpRoute, OAuthStore, SignInCodes } from "@taskmeter/mcp"
import { Api } from "../Api.ts"
import { CurrentSession } from "../api/SessionSecurity.ts"
import { SessionSettings } from "../SessionCookie.ts"
import { toApiUnavailable } from "./StoreFailures.ts"

export const layer = HttpApiBuilder.group(Api, "agentCodes", (handlers) =>
  Effect.gen(function* () {
    const oauth = yield* OAuthStore.OAuthStore
    const accounts = yield* Accounts.Accounts
    const mcpUrl = new URL(McpRoute.PATH, (yield* SessionSettings).publicBaseUrl).href
    return handlers.handle("create", () =>
      Effect.gen(function* () {
        const { live } = yield* CurrentSession
        const { code, expiresAt } = yield* SignInCodes.create(live.record.accountId).pipe(
          Effect.provideService(OAuthStore.OAuthStore, oauth),
          Effect.provideService(Accounts.Accounts, accounts)
        )
        return { code, expiresAt: expiresAt.toISOString(), mcpUrl }
      }).pipe(
        Effect.catchTags({
          StoreUnavailable: toApiUnavailable,
          // The session's account exists while the session lives; gone in between, there is nothing to sign in to.
          AccountNotFound: () =>
            Effect.fail(new Errors.AuthRequired({ message: "This account no longer exists; sign in again." }))
        })
      )
    )
  })
)
