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

/** Why an admin procedure failed. Only StoreUnavailable is worth retrying as is. */
export const AdminErrorReason = Schema.Literals([
  "AccountNotFound",
  "KeyNotFound",
  "TaskNotFound",
  "TaskNotResolvable",
  "PriceListInvalid",
  "SignInNotFound",
  "InvalidRequest",
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
   * Settles a reconciliation_required task: succeeded charges `chargeMicros` (at most the
   * quote, by default the quote) and releases the rest; failed releases the whole reservation
   * and keeps the task's errorCode. Succeeded needs `accountId`, to read the quote; with it the
   * task is read first, so a refusal says why.
   */
  Rpc.make("TaskResolve", {
    payload: {
      taskId: Schema.String,
      accountId: Schema.optionalKey(Schema.String),
      outcome: Schema.Literals(["succeeded", "failed"]),
      chargeMicros: Schema.optionalKey(Money.Micros)
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
  Rpc.make("McpSignInRevoke", {
    payload: { signInId: Schema.String, accountId: Schema.optionalKey(Schema.String) },
    success: McpSignInRevoked,
    error: AdminError
  })
) {}
