/**
 * The one mutable state all the memory ports share. JavaScript runs one callback at a time,
 * so a method that does its checks and writes inside a single `Effect.sync` is atomic.
 */
import { Deferred, Effect } from "effect"
import { StatusWatchers } from "@taskmeter/kernel"
import type { AccountStore, LedgerStore, PaymentEvent, PaymentStore } from "@taskmeter/kernel"
import type {
  MediaStore,
  PasskeyStore,
  PaymentWebhook,
  PriceStore,
  SessionStore,
  TaskStore,
  UserStore,
  WebhookEvent,
  WebhookStore
} from "@taskmeter/kernel"

export interface Window {
  start: number
  count: number
}

export interface AccountRow {
  readonly account: AccountStore.Account
  balance: number
  reserved: number
  review: boolean
  /** Newest last; cursors are entry ids. */
  readonly entries: Array<LedgerStore.LedgerEntry>
  /** The charges per UTC day and model (ChatStore.spend), kept by Journal.append; keyed `day model`. */
  readonly spend: Map<string, SpendLine>
  submissions: Window | null
}

export interface SpendLine {
  readonly day: string
  readonly model: string
  taskMicros: number
  chatMicros: number
}

export interface KeyRow {
  record: AccountStore.ApiKeyRecord
  requests: Window | null
}

export interface TaskRow {
  record: TaskStore.TaskRecord
  leaseToken: string | null
  leaseExpiresAt: number | null
  /** What the upstream last answered when the task went to reconciliation_required. */
  upstreamAnswer: string | null
  /** Insertion order, to break ties between tasks created at the same instant. */
  readonly seq: number
}

/** The lease holding an upstream slot (TaskStore.takeSlots). */
export interface SlotHolder {
  readonly taskId: string
  readonly leaseToken: string
}

export interface IdempotencyRow {
  readonly fingerprint: string
  readonly taskId: string
  readonly expiresAt: number
}

export interface PaymentRow {
  readonly payment: PaymentStore.Payment
  refunded: number
  held: number
}

export interface DisputeRow {
  readonly paymentId: string
  readonly amount: number
  status: "open" | "won" | "lost"
}

export interface PaymentEventRow {
  readonly event: PaymentEvent.PaymentEvent
  readonly receivedAt: Date
  appliedAt: Date | null
  problem: string | null
}

export type PaymentEntryReason = "purchase" | "refund" | "hold" | "release" | "dispute_lost"

export interface PaymentEntryRow {
  readonly processor: string
  readonly paymentId: string
  readonly reason: PaymentEntryReason
  readonly entry: LedgerStore.LedgerEntry
}

export interface DeliveryRow {
  delivery: WebhookStore.Delivery
  /** The task when the event happened (a task event). */
  readonly task: TaskStore.TaskRecord | null
  /** The payment after the event (a payment event). */
  readonly payment: PaymentWebhook.PaymentData | null
  leaseToken: string | null
  /** When it is due: its next attempt, or the end of its lease while claimed. */
  dueAt: number
  /** Attempts since it was written or last resent. */
  roundAttempts: number
  /** When it was delivered or failed; null while pending. */
  finishedAt: number | null
  readonly seq: number
}

export interface ChoreRow {
  readonly holder: string | undefined
  readonly leaseUntil: number
  readonly takenAt: number
}

export interface State {
  readonly accounts: Map<string, AccountRow>
  readonly keys: Map<string, KeyRow>
  /** key hash -> key id */
  readonly keysByHash: Map<string, string>
  /** entry id -> owning account id */
  readonly entryOwners: Map<string, string>
  /** `${accountId} ${kind} ${externalRef}` -> entry */
  readonly externalRefs: Map<string, LedgerStore.LedgerEntry>
  readonly tasks: Map<string, TaskRow>
  /** `${accountId} ${idempotencyKey}` -> the admission it protects */
  readonly idempotency: Map<string, IdempotencyRow>
  readonly media: Map<string, MediaStore.MediaRecord>
  readonly results: Map<string, MediaStore.ResultRecord>
  /** Result ids whose files `expireResults` answered (marked removed). */
  readonly expiredResults: Set<string>
  /** Media references whose files `expireMedia` answered (marked removed). */
  readonly expiredMedia: Set<string>
  /** account id -> the retention days the operator set for it. */
  readonly resultRetentionDays: Map<string, number>
  /** The orphan-result sweep: the last record it judged, and those it left while their task was unfinished. */
  readonly orphanSweep: { mark: { readonly createdAt: number; readonly id: string } | undefined; readonly pending: Set<string> }
  /** chore name -> who holds it until when, and when it was last taken */
  readonly chores: Map<string, ChoreRow>
  readonly blobs: Map<string, Uint8Array>
  /** Every price list saved, oldest first: index i holds version i + 1. */
  readonly priceLists: Array<PriceStore.StoredPriceList>
  /** The same for the chat price list (ChatPriceStore). */
  readonly chatPriceLists: Array<PriceStore.StoredPriceList>
  /** `${day} ${model}` -> micros admitted for the model that UTC day (BudgetStore) */
  readonly budgetDays: Map<string, number>
  /** lane -> its slots by number; a slot is free when empty or its lease is not live */
  readonly slots: Map<string, Array<SlotHolder | undefined>>
  /** `${processor} ${paymentId}` -> the payment and what happened to it since */
  readonly payments: Map<string, PaymentRow>
  /** `${processor} ${disputeId}` */
  readonly disputes: Map<string, DisputeRow>
  /** `${processor} ${eventId}`, in the order received */
  readonly paymentEvents: Map<string, PaymentEventRow>
  readonly paymentEntries: Array<PaymentEntryRow>
  /** user id -> user */
  readonly users: Map<string, UserStore.UserRecord>
  /** Oldest first. */
  readonly memberships: Array<UserStore.Membership>
  /** token hash -> the token and whether it was used */
  readonly emailTokens: Map<string, { readonly token: UserStore.EmailToken; used: boolean }>
  /** throttle key (email, address, passkey) -> its failure window */
  readonly signInFailures: Map<string, { readonly start: Date; readonly failures: number }>
  /** session hash -> session */
  readonly sessions: Map<string, SessionStore.SessionRecord>
  /** credential id -> passkey */
  readonly passkeys: Map<string, PasskeyStore.Passkey>
  /** challenge hash -> the challenge and whether it was used */
  readonly passkeyChallenges: Map<string, { readonly challenge: PasskeyStore.PasskeyChallenge; used: boolean }>
  /** Completed and replaced whenever a task may have become claimable. */
  wake: Deferred.Deferred<void>
  /** Waiters for tasks changing status (TaskStore.watchStatus). */
  readonly statuses: StatusWatchers.StatusWatchers
  /** account id -> its event streams open (TaskStore.holdStream) */
  readonly streams: Map<string, number>
  readonly webhookEndpoints: Map<string, WebhookStore.Endpoint>
  /** account id -> its signing secret for per-submission webhook URLs */
  readonly webhookSecrets: Map<string, string>
  /** task id -> the submission's own webhook */
  readonly taskWebhooks: Map<string, WebhookEvent.TaskWebhook>
  /** In the order written. */
  readonly deliveries: Map<string, DeliveryRow>
  nextSeq: number
}

export const make = (): State => ({
  accounts: new Map(),
  keys: new Map(),
  keysByHash: new Map(),
  entryOwners: new Map(),
  externalRefs: new Map(),
  tasks: new Map(),
  idempotency: new Map(),
  media: new Map(),
  results: new Map(),
  expiredResults: new Set(),
  expiredMedia: new Set(),
  resultRetentionDays: new Map(),
  orphanSweep: { mark: undefined, pending: new Set() },
  chores: new Map(),
  blobs: new Map(),
  priceLists: [],
  chatPriceLists: [],
  budgetDays: new Map(),
  slots: new Map(),
  payments: new Map(),
  disputes: new Map(),
  paymentEvents: new Map(),
  paymentEntries: [],
  users: new Map(),
  memberships: [],
  emailTokens: new Map(),
  signInFailures: new Map(),
  sessions: new Map(),
  passkeys: new Map(),
  passkeyChallenges: new Map(),
  wake: Deferred.makeUnsafe<void>(),
  statuses: StatusWatchers.make(),
  streams: new Map(),
  webhookEndpoints: new Map(),
  webhookSecrets: new Map(),
  taskWebhooks: new Map(),
  deliveries: new Map(),
  nextSeq: 0
})

export const wake = (state: State): void => {
  Deferred.doneUnsafe(state.wake, Effect.void)
  state.wake = Deferred.makeUnsafe<void>()
}

export const balancesOf = (row: AccountRow): LedgerStore.Balances => ({
  balanceMicros: row.balance,
  reservedMicros: row.reserved as LedgerStore.Balances["reservedMicros"],
  availableMicros: row.balance - row.reserved,
  paymentReview: row.review
})
