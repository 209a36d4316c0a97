/**
 * /api/v1/webhook-endpoints, /api/v1/webhook-deliveries/{id}/resend and
 * /api/v1/webhook-signing-secret over the kernel's WebhookEndpoints, scoped to the caller's
 * account. Secrets appear only in the answers of create and rotate-secret (and the signing secret's own route).
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { WebhookEndpoints, WebhookEvent } from "@taskmeter/kernel"
import type { Ids, WebhookStore } from "@taskmeter/kernel"
import { Api } from "../Api.ts"
import { DEFAULT_PAGE_SIZE } from "../api/UsageApi.ts"
import { CurrentCaller } from "../api/Security.ts"
import type { WebhookDelivery, WebhookEndpoint } from "../api/WebhooksApi.ts"
import { toApiUnavailable } from "./StoreFailures.ts"

const endpointView = (stored: WebhookStore.Endpoint): WebhookEndpoint => ({
  id: stored.id,
  url: stored.url,
  events: stored.events,
  enabled: stored.enabled,
  disabledReason: stored.disabledReason,
  previousSecretExpiresAt: stored.previousSecretExpiresAt?.toISOString() ?? null,
  createdAt: stored.createdAt.toISOString(),
  updatedAt: stored.updatedAt.toISOString()
})

const withSecret = (stored: WebhookStore.Endpoint) => ({ ...endpointView(stored), secret: stored.secret })

/** A delivery as the API shows it (also in GET /api/v1/jobs/{id}/webhook-deliveries). */
export const deliveryView = (stored: WebhookStore.Delivery): WebhookDelivery => ({
  id: stored.id,
  endpointId: stored.endpointId,
  url: stored.url,
  type: stored.type,
  taskId: stored.taskId,
  paymentId: stored.paymentId,
  status: stored.status,
  occurredAt: stored.occurredAt.toISOString(),
  nextAttemptAt: stored.nextAttemptAt?.toISOString() ?? null,
  attempts: stored.attempts.map((attempt) => ({ ...attempt, at: attempt.at.toISOString() }))
})

export const layer = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.gen(function* () {
    const webhooks = yield* WebhookEndpoints.WebhookEndpoints
    /** `f` for the caller's account. */
    const mine = <A, E, R>(f: (accountId: Ids.AccountId) => Effect.Effect<A, E, R>) =>
      Effect.gen(function* () {
        const caller = yield* CurrentCaller
        return yield* f(caller.accountId)
      })
    return handlers
      .handle("create", ({ payload }) =>
        mine((accountId) =>
          webhooks.create(accountId, { url: payload.url, events: payload.events ?? WebhookEvent.defaultEvents })
        ).pipe(Effect.map(withSecret), Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("list", () =>
        mine(webhooks.list).pipe(
          Effect.map((endpoints) => ({ data: endpoints.map(endpointView) })),
          Effect.catchTag("StoreUnavailable", toApiUnavailable)
        )
      )
      .handle("get", ({ params }) =>
        mine((accountId) => webhooks.get(accountId, params.id)).pipe(
          Effect.map(endpointView),
          Effect.catchTag("StoreUnavailable", toApiUnavailable)
        )
      )
      .handle("update", ({ params, payload }) =>
        mine((accountId) => webhooks.update(accountId, params.id, payload)).pipe(
          Effect.map(endpointView),
          Effect.catchTag("StoreUnavailable", toApiUnavailable)
        )
      )
      .handle("delete", ({ params }) =>
        mine((accountId) => webhooks.remove(accountId, params.id)).pipe(Effect.catchTag("StoreUnavailable", toApiUnavailable))
      )
      .handle("rotateSecret", ({ params }) =>
        mine((accountId) => webhooks.rotateSecret(accountId, params.id)).pipe(
          Effect.map(withSecret),
          Effect.catchTag("StoreUnavailable", toApiUnavailable)
        )
      )
      .handle("deliveries", ({ params, query }) =>
        mine((accountId) =>
          webhooks.deliveries(accountId, params.id, { limit: query.limit ?? DEFAULT_PAGE_SIZE, before: query.before })
        ).pipe(
          Effect.map((page) => ({ data: page.deliveries.map(deliveryView), nextCursor: page.nextCursor })),
          Effect.catchTag("StoreUnavailable", toApiUnavailable)
        )
      )
      .handle("resend", ({ params }) =>
        mine((accountId) => webhooks.resend(accountId, params.id)).pipe(
          Effect.map(deliveryView),
          Effect.catchTag("StoreUnavailable", toApiUnavailable)
        )
      )
      .handle("signingSecret", () =>
        mine(webhooks.signingSecret).pipe(
          Effect.map((secret) => ({ secret })),
          Effect.catchTag("StoreUnavailable", toApiUnavailable)
        )
      )
  })
)
