/**
 * What an account does with its webhooks: endpoints created (the secret shown once), listed,
 * changed, deleted, their secret rotated (the previous one keeps signing for the overlap window),
 * their delivery log read (per endpoint, or per task) and any delivery sent again; and the account's signing secret for
 * per-submission `webhookUrl`s. URLs must pass the outbound address policy (syntactically; the
 * delivery checks the resolved addresses). Every read is scoped to the caller's account: another
 * account's endpoint or delivery is RequestNotFound.
 */
import { randomUUID } from "node:crypto"
import { Clock, Context, Effect, Layer } from "effect"
import * as Errors from "../domain/Errors.ts"
import type { AccountId, TaskId } from "../domain/Ids.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import { AddressPolicy, urlProblem } from "../outbound/AddressPolicy.ts"
import * as Signature from "./Signature.ts"
import type { EventType } from "./WebhookEvent.ts"
import { WebhookStore } from "./WebhookStore.ts"
import type { Delivery, Endpoint } from "./WebhookStore.ts"

export interface Options {
  /** How long the previous secret keeps signing after a rotation. Default 24 hours. */
  readonly rotationOverlapMs?: number | undefined
}

export interface DeliveryPage {
  readonly deliveries: ReadonlyArray<Delivery>
  readonly nextCursor: string | null
}

type Failure = Errors.InvalidRequest | Errors.RequestNotFound | StoreUnavailable
type Lookup = Errors.RequestNotFound | StoreUnavailable

export class WebhookEndpoints extends Context.Service<
  WebhookEndpoints,
  {
    readonly create: (
      accountId: AccountId,
      request: { readonly url: string; readonly events: ReadonlyArray<EventType> }
    ) => Effect.Effect<Endpoint, Errors.InvalidRequest | StoreUnavailable>
    readonly list: (accountId: AccountId) => Effect.Effect<ReadonlyArray<Endpoint>, StoreUnavailable>
    readonly get: (accountId: AccountId, id: string) => Effect.Effect<Endpoint, Lookup>
    readonly update: (
      accountId: AccountId,
      id: string,
      patch: {
        readonly url?: string | undefined
        readonly events?: ReadonlyArray<EventType> | undefined
        readonly enabled?: boolean | undefined
      }
    ) => Effect.Effect<Endpoint, Failure>
    readonly remove: (accountId: AccountId, id: string) => Effect.Effect<void, Lookup>
    readonly rotateSecret: (accountId: AccountId, id: string) => Effect.Effect<Endpoint, Lookup>
    readonly deliveries: (
      accountId: AccountId,
      endpointId: string,
      page: { readonly limit: number; readonly before?: string | undefined }
    ) => Effect.Effect<DeliveryPage, Lookup>
    /** Every delivery about the task (its own webhook's and its endpoints'); the caller checks the task is the account's. */
    readonly taskDeliveries: (
      accountId: AccountId,
      taskId: TaskId,
      page: { readonly limit: number; readonly before?: string | undefined }
    ) => Effect.Effect<DeliveryPage, StoreUnavailable>
    readonly resend: (accountId: AccountId, deliveryId: string) => Effect.Effect<Delivery, Lookup>
    /** The account's signing secret for per-submission webhook URLs (made on first use). */
    readonly signingSecret: (accountId: AccountId) => Effect.Effect<string, StoreUnavailable>
  }
>()("@taskmeter/kernel/WebhookEndpoints") {}

/** A page of `limit` from one more read: the cursor is its last delivery when there is more. */
const paged = (deliveries: ReadonlyArray<Delivery>, limit: number): DeliveryPage => {
  const more = deliveries.length > limit
  const shown = more ? deliveries.slice(0, limit) : deliveries
  return { deliveries: shown, nextCursor: more ? shown[shown.length - 1]!.id : null }
}

const DEFAULT_OVERLAP_MS = 24 * 60 * 60 * 1000

/** What is wrong with a webhook URL under the address policy in force, as a message naming `field`, or undefined. */
export const urlRefusal = (field: string, url: string): Effect.Effect<string | undefined> =>
  Effect.gen(function* () {
    const policy = yield* AddressPolicy
    const problem = url.length > 2000 ? "is longer than 2000 characters" : urlProblem(url, policy)
    return problem === undefined ? undefined : `${field} ${problem}; send a public https URL.`
  })

const checkedUrl = (url: string) =>
  Effect.flatMap(urlRefusal("url", url), (message) =>
    message === undefined ? Effect.void : Effect.fail(new Errors.InvalidRequest({ message }))
  )

const notFound = (what: string, id: string) =>
  new Errors.RequestNotFound({ message: `No webhook ${what} ${id} belongs to this account.` })

const found =
  <A>(what: string, id: string) =>
  (value: A | undefined): Effect.Effect<A, Errors.RequestNotFound> =>
    value === undefined ? Effect.fail(notFound(what, id)) : Effect.succeed(value)

const nowDate = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

export const make = (options: Options = {}) =>
  Effect.gen(function* () {
    const store = yield* WebhookStore
    const overlapMs = options.rotationOverlapMs ?? DEFAULT_OVERLAP_MS
    return WebhookEndpoints.of({
      create: (accountId, request) =>
        Effect.gen(function* () {
          yield* checkedUrl(request.url)
          const now = yield* nowDate
          return yield* store.createEndpoint({
            id: `whep_${randomUUID()}`,
            accountId,
            url: request.url,
            events: request.events,
            secret: Signature.newSecret(),
            now
          })
        }),
      list: (accountId) => store.listEndpoints(accountId),
      get: (accountId, id) => Effect.flatMap(store.getEndpoint(accountId, id), found("endpoint", id)),
      update: (accountId, id, patch) =>
        Effect.gen(function* () {
          if (patch.url !== undefined) yield* checkedUrl(patch.url)
          const now = yield* nowDate
          return yield* Effect.flatMap(
            store.updateEndpoint(accountId, id, {
              ...patch,
              ...(patch.enabled === false ? { disabledReason: "disabled by its owner" } : {}),
              now
            }),
            found("endpoint", id)
          )
        }),
      remove: (accountId, id) =>
        Effect.flatMap(store.deleteEndpoint(accountId, id), (deleted) =>
          deleted ? Effect.void : Effect.fail(notFound("endpoint", id))
        ),
      rotateSecret: (accountId, id) =>
        Effect.gen(function* () {
          const now = yield* nowDate
          return yield* Effect.flatMap(
            store.rotateSecret(accountId, id, {
              secret: Signature.newSecret(),
              previousExpiresAt: new Date(now.getTime() + overlapMs),
              now
            }),
            found("endpoint", id)
          )
        }),
      deliveries: (accountId, endpointId, page) =>
        Effect.map(
          Effect.flatMap(store.listDeliveries(accountId, endpointId, page.limit + 1, page.before), found("endpoint", endpointId)),
          (deliveries) => paged(deliveries, page.limit)
        ),
      taskDeliveries: (accountId, taskId, page) =>
        Effect.map(store.listTaskDeliveries(accountId, taskId, page.limit + 1, page.before), (deliveries) =>
          paged(deliveries, page.limit)
        ),
      resend: (accountId, deliveryId) =>
        Effect.flatMap(
          Effect.flatMap(nowDate, (now) => store.resend(accountId, deliveryId, now)),
          found("delivery", deliveryId)
        ),
      signingSecret: (accountId) => Effect.flatMap(nowDate, (now) => store.accountSecret(accountId, Signature.newSecret(), now))
    })
  })

export const layer = (options: Options = {}): Layer.Layer<WebhookEndpoints, never, WebhookStore> =>
  Layer.effect(WebhookEndpoints, make(options))
