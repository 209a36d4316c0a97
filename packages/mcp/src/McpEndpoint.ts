/**
 * The MCP endpoint with its OAuth sign-in, as one layer of routes for the service's HttpRouter
 * (`layer({ baseUrl })`): `{base}/mcp` (McpRoute), the authorization server and discovery documents
 * (OAuthRoutes), and a background sweep of expired sign-in records. It needs an OAuthStore and the
 * kernel services (Accounts, Catalog, Pricer, TaskRunner, Ledger, ResultUrls). Wiring only.
 */
import { Clock, Duration, Effect, Layer } from "effect"
import type { HttpRouter } from "effect/http"
import type { Accounts } from "@taskmeter/kernel"
import * as AuthorizationServer from "./AuthorizationServer.ts"
import * as McpHandler from "./McpHandler.ts"
import * as McpRoute from "./McpRoute.ts"
import * as OAuthRoutes from "./OAuthRoutes.ts"
import { OAuthStore } from "./OAuthStore.ts"
import type * as Tools from "./Tools.ts"
import type * as TransportGuard from "./TransportGuard.ts"

export interface Options extends AuthorizationServer.Options, TransportGuard.Options {
  /** How often expired codes, sign-ins and tokens are deleted (default 1 hour). */
  readonly purgeEvery?: Duration.Input | undefined
}

/** Deletes expired OAuth records now and then; a failed sweep is logged and retried next time. */
const purge = (every: Duration.Input) =>
  Layer.effectDiscard(
    Effect.forkScoped(
      Effect.gen(function* () {
        const store = yield* OAuthStore
        for (;;) {
          yield* Effect.sleep(every)
          const now = new Date(yield* Clock.currentTimeMillis)
          yield* store
            .purgeExpired(now)
            .pipe(
              Effect.catchTag("StoreUnavailable", (error) => Effect.logWarning("Purging expired OAuth records failed", error))
            )
        }
      })
    )
  )

/** Adds /mcp, the OAuth endpoints and the well-known documents to the HttpRouter in context. */
export const layer = (
  options: Options
): Layer.Layer<never, never, HttpRouter.HttpRouter | OAuthStore | Accounts.Accounts | Tools.Services> => {
  const { issuer } = AuthorizationServer.settings(options)
  return Layer.mergeAll(OAuthRoutes.layer, McpRoute.layer(options), purge(options.purgeEvery ?? "1 hour")).pipe(
    Layer.provide([AuthorizationServer.layer(options), McpHandler.layer({ baseUrl: issuer })])
  )
}
