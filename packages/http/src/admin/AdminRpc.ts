/**
 * The admin service's contract as effect/rpc procedures (accounts, keys, grants, refunds, prices, chat prices,
 * reconciliation, MCP sign-in codes and sign-ins), schemas and group only, so a client imports it
 * without server code (handlers: AdminHandlers; route and token guard: AdminServer; client:
 * AdminClient). Amounts are integer USD micros, dates ISO 8601, ids plain strings; every procedure
 * fails only with `AdminError`, whose `reason` says why.
 */
import { Schema } from "effect"
import { Rpc, RpcGroup } from "effect/rpc"
import { ChatPrices, Money, PriceList, Scope } from "@taskmeter/kernel"

/** Where the admin listener serves the procedures. */
export const PATH = "/admin/rpc"

/** Where the public listener serves the operator pages' procedures to an operator's console session. */
export const OPERATOR_PATH = "/api/v1/operator/rpc"

/** The procedures the console's operator pages use: accounts, credits, prices, chat prices, the queue, revenue. */
export const OPERATOR_PROCEDURES = [
  "AccountList",
  "AccountShow",
  "CreditsGrant",
  "Refund",
  "PriceList",
  "PriceSet",
  "PriceDisable",
  "ChatPriceList",
  "ChatPriceSet",
  "ChatPriceDisable",
  "TaskList",
  "TaskResolve",
  "Revenue"
] as const

/** Why an admin procedure failed. Only StoreUnavailable is worth retrying as is. */
export const AdminErrorReason = Schema.Literals([
  "AccountNotFound",
  "KeyNotFound",
  "TaskNotFound",
  "TaskNotResolvable",
  "ResultUnavailable",
  "PriceListInvalid",
  "SignInNotFound",
  "UserNotFound",
  "InvalidRequest",
  "PaymentsNotConfigured",
  "ProcessorUnavailable",
  "StoreUnavailable"
])
export type AdminErrorReason = typeof AdminErrorReason.Type

export class AdminError extends Schema.TaggedError<AdminError>()("AdminError", {
  reason: AdminErrorReason,
  message: Schema.String
}) {}

const Timestamp = Schema.String.annotate({ description: "ISO 8601 date-time" })
/** A positive amount: granting or refunding nothing is a mistake worth reporting. */
const PositiveMicros = Money.Micros.check(Schema.isGreaterThan(0))
const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const Days = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 36_500 }))

/** How long an account's result files are kept: its own days, or null for the service's default. */
export const AccountRetention = Schema.Struct({
  accountId: Schema.String,
  resultRetentionDays: Schema.NullOr(Schema.Int),
  /** RESULT_RETENTION of the server that answered. */
  defaultDays: Schema.Int
})
export type AccountRetention = typeof AccountRetention.Type

/**
 * Per model and upstream: requests, what they were charged, what the upstream cost (where
 * configured), the difference, and the shortfall (usage cost beyond the reservations, not charged).
 */
export const ChatMargin = Schema.Struct({
  from: Timestamp,
  to: Timestamp,
  rows: Schema.Array(
    Schema.Struct({
      model: Schema.String,
      upstream: Schema.NullOr(Schema.String),
      requests: Count,
      chargedMicros: Schema.Int,
      upstreamCostMicros: Schema.Int,
      marginMicros: Schema.Int,
      shortfallMicros: Schema.Int
    })
  )
})

const Day = Schema.String.annotate({ description: "A UTC day, YYYY-MM-DD" })

const RevenueFigures = {
  tasksCharged: Count,
  taskChargedMicros: Schema.Int,
  tasksReleased: Count,
  taskReleasedMicros: Schema.Int,
  chatRequests: Count,
  chatChargedMicros: Schema.Int,
  chatUpstreamCostMicros: Schema.Int,
  chatShortfallMicros: Schema.Int
}

/**
 * Revenue of the UTC days from `from` to `to` (both included), per day and model: task charges and
 * releases as the ledger records them (model null: the task is no longer stored), settled chat
 * requests by creation with their upstream cost and shortfall; refunds per day (an account's, not
 * a model's); the totals of it all. `truncated`: more lines than REVENUE_ROWS, the rest left out.
 */
export const Revenue = Schema.Struct({
  from: Day,
  to: Day,
  rows: Schema.Array(Schema.Struct({ day: Day, model: Schema.NullOr(Schema.String), ...RevenueFigures })),
  refunds: Schema.Array(Schema.Struct({ day: Day, refunds: Count, refundedMicros: Schema.Int })),
  totals: Schema.Struct({ ...RevenueFigures, refunds: Count, refundedMicros: Schema.Int }),
  truncated: Schema.Boolean
})
export type Revenue = typeof Revenue.Type

/** At most this many days in one revenue report. */
export const REVENUE_MAX_DAYS = 366

/** A console sign-up link, shown once. */
export const Invitation = Schema.Struct({ email: Schema.String, link: Schema.String, expiresAt: Timestamp })
export type Invitation = typeof Invitation.Type

export const Balances = Schema.Struct({
  balanceMicros: Schema.Int,
  reservedMicros: Schema.Int,
  availableMicros: Schema.Int,
  paymentReview: Schema.Boolean
})
export type Balances = typeof Balances.Type

export const Account = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  createdAt: Timestamp
})
export type Account = typeof Account.Type

export const AccountSummary = Schema.Struct({ ...Account.fields, balances: Balances })
export type AccountSummary = typeof AccountSummary.Type

/** A key as the operator sees it: never the secret, never its hash. */
export const ApiKey = Schema.Struct({
  id: Schema.String,
  accountId: Schema.String,
  name: Schema.String,
  displayPrefix: Schema.String,
  scopes: Schema.Array(Scope.Scope),
  createdAt: Timestamp,
  revokedAt: Schema.NullOr(Timestamp),
  rateLimitPerMinute: Schema.NullOr(Schema.Int),
  usageLimit: Schema.NullOr(Schema.Int),
  usageCount: Schema.Int
})
export type ApiKey = typeof ApiKey.Type

/** A new key with its secret, which is shown this once and cannot be recovered. */
export const CreatedKey = Schema.Struct({ key: ApiKey, secret: Schema.String })
export type CreatedKey = typeof CreatedKey.Type

export const AccountDetails = Schema.Struct({
  account: Account,
  balances: Balances,
  keys: Schema.Array(ApiKey)
})
export type AccountDetails = typeof AccountDetails.Type

export const LedgerEntry = Schema.Struct({
  id: Schema.String,
  accountId: Schema.String,
  kind: Schema.Literals(["grant", "reserve", "charge", "release", "refund", "adjustment"]),
  amountMicros: Schema.Int,
  taskId: Schema.NullOr(Schema.String),
  chatRequestId: Schema.NullOr(Schema.String),
  note: Schema.NullOr(Schema.String),
  createdAt: Timestamp
})
export type LedgerEntry = typeof LedgerEntry.Type

export const Movement = Schema.Struct({ entry: LedgerEntry, balances: Balances })
export type Movement = typeof Movement.Type

export const Task = Schema.Struct({
  id: Schema.String,
  accountId: Schema.String,
  model: Schema.String,
  status: Schema.String,
  errorCode: Schema.NullOr(Schema.String),
  priceMicros: Schema.Int,
  chargedMicros: Schema.NullOr(Schema.Int),
  createdAt: Timestamp,
  updatedAt: Timestamp
})
export type Task = typeof Task.Type

/** A task in the operator queue (reconciliation_required): how long it has waited, and why. */
export const HeldTask = Schema.Struct({
  ...Task.fields,
  ageSeconds: Count,
  upstreamRef: Schema.NullOr(Schema.String),
  /** What the upstream last answered when the worker gave the task up (null: nothing recorded). */
  upstreamAnswer: Schema.NullOr(Schema.String)
})
export type HeldTask = typeof HeldTask.Type

export const HeldTaskPage = Schema.Struct({
  tasks: Schema.Array(HeldTask),
  /** Pass as `after` for the next page; null on the last one. */
  next: Schema.NullOr(Schema.String)
})
export type HeldTaskPage = typeof HeldTaskPage.Type

/** The most tasks one TaskList page holds. */
export const MAX_TASK_PAGE = 100

/** A media type a result may have: image, audio, video or text. */
const ResultContentType = Schema.String.check(
  Schema.isPattern(/^(image|audio|video|text)\/[a-z0-9][a-z0-9.+-]*$/, {
    message: "a content type of image/*, audio/*, video/* or text/*, such as image/png"
  })
)

/** A result an operator attaches: a public https link the server fetches, or the file's bytes. */
export const ResultToAttach = Schema.Union([
  Schema.Struct({ url: Schema.String, contentType: ResultContentType }),
  Schema.Struct({ base64: Schema.String, contentType: ResultContentType })
])
export type ResultToAttach = typeof ResultToAttach.Type

/** The most results one resolution attaches. */
export const MAX_ATTACHED_RESULTS = 8

const Figures = Schema.Struct({ balanceMicros: Schema.Int, reservedMicros: Schema.Int })

/** An account whose cached balance disagrees with its journal. */
export const AuditFinding = Schema.Struct({ accountId: Schema.String, cached: Figures, journal: Figures })
export type AuditFinding = typeof AuditFinding.Type

/** A one-time sign-in code, shown this once: the server keeps only its hash. */
export const SignInCode = Schema.Struct({
  accountId: Schema.String,
  code: Schema.String,
  expiresAt: Timestamp
})
export type SignInCode = typeof SignInCode.Type

/**
 * An MCP sign-in: one OAuth grant of an MCP client to an account, with its family of rotating
 * refresh tokens. Listed while it can still be refreshed.
 */
export const McpSignIn = Schema.Struct({
  id: Schema.String,
  accountId: Schema.String,
  /** The OAuth client: a registered id (mcpc_...) or a metadata document URL. */
  clientId: Schema.String,
  clientName: Schema.NullOr(Schema.String),
  /** The API key signed in with; null for a one-time sign-in code. */
  apiKeyId: Schema.NullOr(Schema.String),
  scopes: Schema.Array(Schema.String),
  createdAt: Timestamp,
  /** When its newest tokens were issued: the sign-in or its latest refresh. */
  lastRefreshedAt: Timestamp,
  /** When it ends unless refreshed before (never past its total lifetime). */
  expiresAt: Timestamp
})
export type McpSignIn = typeof McpSignIn.Type

export const McpSignInRevoked = Schema.Struct({
  id: Schema.String,
  accountId: Schema.String,
  revokedAt: Timestamp,
  /** It had been revoked before (revokedAt is that time); nothing changed. */
  alreadyRevoked: Schema.Boolean
})
export type McpSignInRevoked = typeof McpSignInRevoked.Type

/** A payment made through the processor, and what became of it. */
export const Payment = Schema.Struct({
  processor: Schema.String,
  paymentId: Schema.String,
  accountId: Schema.String,
  amountMicros: Schema.Int,
  refundedMicros: Schema.Int,
  heldMicros: Schema.Int,
  createdAt: Timestamp
})
export type Payment = typeof Payment.Type

/** A processor's event as kept: applied, or not yet with the reason. */
export const PaymentEvent = Schema.Struct({
  processor: Schema.String,
  eventId: Schema.String,
  kind: Schema.String,
  paymentId: Schema.String,
  /** The event as decoded (amounts in micros). */
  detail: Schema.Record(Schema.String, Schema.Unknown),
  receivedAt: Timestamp,
  appliedAt: Schema.NullOr(Timestamp),
  problem: Schema.NullOr(Schema.String)
})
export type PaymentEvent = typeof PaymentEvent.Type

export const PaymentDiscrepancy = Schema.Struct({
  paymentId: Schema.String,
  accountId: Schema.NullOr(Schema.String),
  problem: Schema.Literals(["missing", "duplicate", "amount_mismatch", "refund_mismatch"]),
  processorMicros: Schema.Int,
  ledgerMicros: Schema.Int
})
export type PaymentDiscrepancy = typeof PaymentDiscrepancy.Type

const CreditChange = {
  accountId: Schema.String,
  amountMicros: PositiveMicros,
  note: Schema.optionalKey(Schema.String),
  /** A payment id: repeating a change with the same reference returns the first one. */
  externalRef: Schema.optionalKey(Schema.String)
}

export class AdminRpcs extends RpcGroup.make(
  Rpc.make("AccountCreate", {
    payload: { name: Schema.String, creditsMicros: Schema.optionalKey(PositiveMicros) },
    success: Schema.Struct({ account: Account, balances: Balances, key: CreatedKey }),
    error: AdminError
  }),
  Rpc.make("AccountList", { success: Schema.Array(AccountSummary), error: AdminError }),
  Rpc.make("AccountShow", { payload: { accountId: Schema.String }, success: AccountDetails, error: AdminError }),
  /** Sets the days the account's results stored from now on are kept; null: the default again. */
  Rpc.make("AccountRetention", {
    payload: { accountId: Schema.String, days: Schema.NullOr(Days) },
    success: AccountRetention,
    error: AdminError
  }),
  Rpc.make("KeyCreate", {
    payload: {
      accountId: Schema.String,
      name: Schema.optionalKey(Schema.String),
      /** Omitted: every scope. */
      scopes: Schema.optionalKey(Schema.Array(Scope.Scope).check(Schema.isMinLength(1))),
      rateLimitPerMinute: Schema.optionalKey(Count),
      usageLimit: Schema.optionalKey(Count)
    },
    success: CreatedKey,
    error: AdminError
  }),
  Rpc.make("KeyRevoke", {
    payload: { accountId: Schema.String, keyId: Schema.String },
    error: AdminError
  }),
  Rpc.make("CreditsGrant", { payload: CreditChange, success: Movement, error: AdminError }),
  /** A payment refund; it may put the account into payment review (PAYMENT_REVIEW_REQUIRED). */
  Rpc.make("Refund", { payload: CreditChange, success: Movement, error: AdminError }),
  Rpc.make("PriceList", { success: PriceList.PriceList, error: AdminError }),
  /**
   * Sets one model's entry, its daily budget, or both (one of them must be given); the whole
   * list is checked against the catalog before it applies, and the model's entry as set is
   * answered. `entry` replaces the model's entry but keeps its daily budget unless it names one;
   * `dailyBudgetMicros` then sets the budget, or with null removes it. A budget alone leaves the
   * rest of the entry as it is (a model not in the list gets a disabled entry, as disabling one
   * does). Changes of other models or parts made meanwhile by other processes are kept.
   */
  Rpc.make("PriceSet", {
    payload: {
      model: Schema.String,
      entry: Schema.optionalKey(PriceList.ModelPrice),
      dailyBudgetMicros: Schema.optionalKey(Schema.NullOr(PriceList.DailyBudget))
    },
    success: PriceList.ModelPrice,
    error: AdminError
  }),
  Rpc.make("PriceDisable", { payload: { model: Schema.String }, error: AdminError }),
  /** The operator queue: tasks in `status` (reconciliation_required only) by id, a page at a time. */
  Rpc.make("TaskList", {
    payload: {
      status: Schema.Literals(["reconciliation_required"]),
      limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_TASK_PAGE }))),
      after: Schema.optionalKey(Schema.String)
    },
    success: HeldTaskPage,
    error: AdminError
  }),
  Rpc.make("ChatPriceList", { success: ChatPrices.ChatPriceList, error: AdminError }),
  /**
   * Sets (and enables) one chat model's entry: what is given replaces that part of the model's
   * entry, the rest stays as it is (a model not listed needs provider, contextLength and tiers);
   * the whole list is checked before it applies, and the entry as set is answered.
   */
  Rpc.make("ChatPriceSet", {
    payload: {
      model: Schema.String,
      provider: Schema.optionalKey(Schema.String),
      contextLength: Schema.optionalKey(Schema.Int),
      tokenizer: Schema.optionalKey(ChatPrices.Tokenizer),
      tiers: Schema.optionalKey(Schema.Array(ChatPrices.ChatPriceTier))
    },
    success: ChatPrices.ChatModelPrice,
    error: AdminError
  }),
  Rpc.make("ChatPriceDisable", { payload: { model: Schema.String }, error: AdminError }),
  /**
   * The chat margin of the settled requests created in [from, to) (by default the last 24 hours
   * up to now), per model and upstream (null: none, the offline model): at most MARGIN_ROWS lines.
   */
  Rpc.make("ChatMargin", {
    payload: { from: Schema.optionalKey(Timestamp), to: Schema.optionalKey(Timestamp) },
    success: ChatMargin,
    error: AdminError
  }),
  /** The revenue report (see Revenue) of at most REVENUE_MAX_DAYS days. */
  Rpc.make("Revenue", {
    payload: { from: Day, to: Day },
    success: Revenue,
    error: AdminError
  }),
  /**
   * Settles a reconciliation_required task: succeeded attaches `results` (at least one, fetched
   * or uploaded, stored before the charge), charges `chargeMicros` (at most the quote, by
   * default the quote) and releases the rest; failed releases the whole reservation and keeps the
   * task's errorCode. `reason` is the note of every ledger entry written. Succeeded needs
   * `accountId`, to read the quote; with it the task is read first, so a refusal says why.
   */
  Rpc.make("TaskResolve", {
    payload: {
      taskId: Schema.String,
      accountId: Schema.optionalKey(Schema.String),
      outcome: Schema.Literals(["succeeded", "failed"]),
      chargeMicros: Schema.optionalKey(Money.Micros),
      reason: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(500)),
      results: Schema.optionalKey(Schema.Array(ResultToAttach).check(Schema.isMaxLength(MAX_ATTACHED_RESULTS)))
    },
    success: Task,
    error: AdminError
  }),
  /** Recomputes every account from its journal; an empty list means the books balance. */
  Rpc.make("Audit", { success: Schema.Array(AuditFinding), error: AdminError }),
  /**
   * A code the account's owner enters on the MCP sign-in page instead of an API key: it works
   * once, within ten minutes, and grants the MCP tools every scope.
   */
  Rpc.make("SignInCodeCreate", { payload: { accountId: Schema.String }, success: SignInCode, error: AdminError }),
  /** The account's MCP sign-ins that can still be used, newest first. */
  Rpc.make("McpSignInList", { payload: { accountId: Schema.String }, success: Schema.Array(McpSignIn), error: AdminError }),
  /**
   * Ends an MCP sign-in: its access and refresh tokens stop working at once, and the client must
   * sign in again. With `accountId`, a sign-in of another account is SignInNotFound.
   */
  /** The account's payments through the processor, newest first. */
  Rpc.make("PaymentList", { payload: { accountId: Schema.String }, success: Schema.Array(Payment), error: AdminError }),
  /** Kept processor events, newest first; only those not applied (unknown account, out of order) if asked. */
  Rpc.make("PaymentEvents", {
    payload: {
      unapplied: Schema.Boolean,
      limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 })))
    },
    success: Schema.Array(PaymentEvent),
    error: AdminError
  }),
  /**
   * The processor's payments and refunds of the period [from, to) against the ledger: each one
   * the ledger lacks, grants twice or for another amount, or whose refunds differ.
   */
  Rpc.make("PaymentReconcile", {
    payload: { from: Timestamp, to: Timestamp },
    success: Schema.Array(PaymentDiscrepancy),
    error: AdminError
  }),
  Rpc.make("McpSignInRevoke", {
    payload: { signInId: Schema.String, accountId: Schema.optionalKey(Schema.String) },
    success: McpSignInRevoked,
    error: AdminError
  }),
  /**
   * Mails (and answers) a console sign-up link for `email`, `<PUBLIC_URL>/sign-up?invitation=...`,
   * working once within 7 days; the only way to sign up under SIGNUP=invite. With `accountId`
   * the new user joins that account (as `role`, default member) instead of getting one.
   */
  Rpc.make("UserInvite", {
    payload: {
      email: Schema.String,
      accountId: Schema.optionalKey(Schema.String),
      role: Schema.optionalKey(Schema.Literals(["owner", "member"]))
    },
    success: Invitation,
    error: AdminError
  }),
  /** Marks (or unmarks) the console user with this email as an operator. UserNotFound when no user has it. */
  Rpc.make("OperatorSet", {
    payload: { email: Schema.String, operator: Schema.Boolean },
    success: Schema.Struct({ email: Schema.String, operator: Schema.Boolean }),
    error: AdminError
  })
) {}
