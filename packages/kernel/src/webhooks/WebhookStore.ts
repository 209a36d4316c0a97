/**
 * Storage port for webhooks: an account's endpoints (url, events, enabled, the signing secret and
 * during a rotation the previous one), the account's signing secret for per-submission URLs, and
 * the delivery queue every process shares. Deliveries are written in the same unit as the change
 * that raises them, so no event is lost: by the task store with the task's move (one per event and
 * matching endpoint, one for the task's own `webhookUrl`), by the payment store with the applied
 * payment event (one per matching endpoint; PaymentWebhook). Across processes: a delivery has at
 * most one live lease; `claim` leases due deliveries skipping those another claim holds, and a
 * lease that lapses (its worker died) makes the delivery due again, same id; `record` is a
 * compare-and-set on the lease token. The delivery log is read per endpoint or per task, and
 * finished deliveries are purged by their finish time.
 */
import { Context } from "effect"
import type { Effect } from "effect"
import type { AccountId, TaskId } from "../domain/Ids.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import type { PaymentData } from "../payments/PaymentWebhook.ts"
import type { TaskRecord } from "../tasks/TaskStore.ts"
import type { EventType } from "./WebhookEvent.ts"

export interface Endpoint {
  readonly id: string
  readonly accountId: AccountId
  readonly url: string
  /** The events delivered to it. */
  readonly events: ReadonlyArray<EventType>
  readonly enabled: boolean
  /** Why it is disabled (by its owner, or for failing); null while enabled. */
  readonly disabledReason: string | null
  readonly secret: string
  /** The secret before the last rotation, still signing until `previousSecretExpiresAt`. */
  readonly previousSecret: string | null
  readonly previousSecretExpiresAt: Date | null
  /** Since when every attempt to it failed; null after a success. */
  readonly failingSince: Date | null
  readonly createdAt: Date
  readonly updatedAt: Date
}

export interface NewEndpoint {
  readonly id: string
  readonly accountId: AccountId
  readonly url: string
  readonly events: ReadonlyArray<EventType>
  readonly secret: string
  readonly now: Date
}

export interface EndpointPatch {
  readonly url?: string | undefined
  readonly events?: ReadonlyArray<EventType> | undefined
  /** true enables it again (clearing the reason and the failure streak); false disables it with `disabledReason`. */
  readonly enabled?: boolean | undefined
  readonly disabledReason?: string | undefined
  readonly now: Date
}

export type DeliveryStatus = "pending" | "delivered" | "failed"

export interface Attempt {
  readonly at: Date
  /** The HTTP status answered; null when none came (refused, timeout, connection error). */
  readonly statusCode: number | null
  readonly latencyMs: number
  /** The start of the answer's body, at most `MAX_EXCERPT` characters. */
  readonly responseExcerpt: string | null
  readonly error: string | null
}

export const MAX_EXCERPT = 1024

export interface Delivery {
  /** Also the `webhook-id` of every attempt and resend. */
  readonly id: string
  readonly accountId: AccountId
  /** null for a submission's own `webhookUrl`. */
  readonly endpointId: string | null
  readonly url: string
  /** The task of a task event; null for a payment event. */
  readonly taskId: TaskId | null
  /** The processor's payment id of a payment event; null for a task event. */
  readonly paymentId: string | null
  readonly type: EventType
  readonly occurredAt: Date
  readonly status: DeliveryStatus
  readonly attempts: ReadonlyArray<Attempt>
  /** When a pending delivery is next tried; null once it is delivered or failed. */
  readonly nextAttemptAt: Date | null
  readonly createdAt: Date
}

export interface DeliveryClaim {
  readonly delivery: Delivery
  /** The task as it was when the event happened (a task event). */
  readonly task: TaskRecord | null
  /** The payment as it was after the event (a payment event). */
  readonly payment: PaymentData | null
  readonly leaseToken: string
  /** This attempt's number in the retry schedule (1-based; a resend starts it again). */
  readonly attemptNumber: number
  /**
   * The secrets to sign with: the endpoint's (and its previous one until the overlap ends), or
   * the account's; empty when the account has no signing secret yet.
   */
  readonly secrets: ReadonlyArray<string>
  /** false when its endpoint was disabled after the event. */
  readonly endpointEnabled: boolean
}

export type Outcome = { readonly _tag: "Delivered" } | { readonly _tag: "Retry"; readonly at: Date } | { readonly _tag: "Failed" }

export interface AttemptRecord {
  readonly deliveryId: string
  readonly leaseToken: string
  /** Absent when no request was made (the endpoint is disabled). */
  readonly attempt?: Attempt | undefined
  readonly outcome: Outcome
}

export interface Recorded {
  /** false when the lease was lost (the attempt was not recorded). */
  readonly recorded: boolean
  /** After the write: since when the delivery's endpoint has been failing (null: not failing, or no endpoint). */
  readonly endpointFailingSince: Date | null
}

export class WebhookStore extends Context.Service<
  WebhookStore,
  {
    readonly createEndpoint: (endpoint: NewEndpoint) => Effect.Effect<Endpoint, StoreUnavailable>
    /** The account's endpoints, oldest first. */
    readonly listEndpoints: (accountId: AccountId) => Effect.Effect<ReadonlyArray<Endpoint>, StoreUnavailable>
    /** Only if it belongs to the account. */
    readonly getEndpoint: (accountId: AccountId, id: string) => Effect.Effect<Endpoint | undefined, StoreUnavailable>
    readonly updateEndpoint: (
      accountId: AccountId,
      id: string,
      patch: EndpointPatch
    ) => Effect.Effect<Endpoint | undefined, StoreUnavailable>
    /** Makes `secret` current and keeps the current one signing until `previousExpiresAt`. */
    readonly rotateSecret: (
      accountId: AccountId,
      id: string,
      rotation: { readonly secret: string; readonly previousExpiresAt: Date; readonly now: Date }
    ) => Effect.Effect<Endpoint | undefined, StoreUnavailable>
    /** Deletes the endpoint and its deliveries; false when the account has no such endpoint. */
    readonly deleteEndpoint: (accountId: AccountId, id: string) => Effect.Effect<boolean, StoreUnavailable>
    /**
     * The account's signing secret for per-submission URLs: the one kept, or `candidate` kept now
     * when there is none (concurrent callers all get the one kept).
     */
    readonly accountSecret: (accountId: AccountId, candidate: string, now: Date) => Effect.Effect<string, StoreUnavailable>
    /**
     * Leases up to `limit` pending deliveries due at `now` (oldest due first) for `leaseMs`; a
     * delivery whose lease lapses is due again. Reads a bounded part of the queue.
     */
    readonly claim: (options: {
      readonly limit: number
      readonly leaseMs: number
      readonly now: Date
    }) => Effect.Effect<ReadonlyArray<DeliveryClaim>, StoreUnavailable>
    /**
     * One round's outcomes, written together: for each record whose lease is still held, appends
     * the attempt and moves the delivery as `outcome` says. Then each endpoint with attempts in
     * the round is marked failing (since `now`, unless it already was) or not, as its latest
     * attempt says: the one that finished last (`at` + `latencyMs`; a delivery wins a tie).
     * Answers one `Recorded` per record, in order.
     */
    readonly recordRound: (
      records: ReadonlyArray<AttemptRecord>,
      now: Date
    ) => Effect.Effect<ReadonlyArray<Recorded>, StoreUnavailable>
    /**
     * Disables an enabled endpoint failing since `failingSince` or earlier, with `reason`; the
     * endpoint when this call disabled it (exactly one of concurrent callers), else undefined.
     */
    readonly disableFailing: (
      endpointId: string,
      failingSince: Date,
      reason: string,
      now: Date
    ) => Effect.Effect<Endpoint | undefined, StoreUnavailable>
    /**
     * The endpoint's deliveries, newest first, at most `limit`, after (older than) the delivery
     * `before` when given; undefined when the endpoint is not the account's.
     */
    readonly listDeliveries: (
      accountId: AccountId,
      endpointId: string,
      limit: number,
      before?: string | undefined
    ) => Effect.Effect<ReadonlyArray<Delivery> | undefined, StoreUnavailable>
    /**
     * Every delivery about the task (to the account's endpoints and to the task's own webhook),
     * newest first, at most `limit`, after (older than) the delivery `before` when given; empty
     * when the task is not the account's.
     */
    readonly listTaskDeliveries: (
      accountId: AccountId,
      taskId: TaskId,
      limit: number,
      before?: string | undefined
    ) => Effect.Effect<ReadonlyArray<Delivery>, StoreUnavailable>
    /**
     * Deletes up to `limit` deliveries that finished (delivered or failed) before `finishedBefore`,
     * oldest finish first, with their attempts; how many. A resent delivery finishes anew.
     */
    readonly purgeFinished: (finishedBefore: Date, limit: number) => Effect.Effect<number, StoreUnavailable>
    /**
     * Makes the account's delivery pending and due at `now` again (same id), its retry schedule
     * started again; undefined when not the account's.
     */
    readonly resend: (
      accountId: AccountId,
      deliveryId: string,
      now: Date
    ) => Effect.Effect<Delivery | undefined, StoreUnavailable>
  }
>()("@taskmeter/kernel/WebhookStore") {}
