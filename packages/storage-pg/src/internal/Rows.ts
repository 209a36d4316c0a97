/**
 * Rows as the driver returns them (snake_case columns, int8 as bigint, timestamptz as Date,
 * jsonb parsed) and their mapping to the kernel's records. Money columns are bigint in SQL and
 * safe integers in the kernel, so `Number` is exact here.
 */
import type {
  AccountStore,
  Ids,
  LedgerStore,
  MediaReference,
  MediaStore,
  Money,
  Scope,
  TaskStatus,
  TaskStore
} from "@taskmeter/kernel"

type Int8 = bigint | number

export interface AccountRow {
  readonly id: string
  readonly name: string
  readonly created_at: Date
}

export const toAccount = (row: AccountRow): AccountStore.Account => ({
  id: row.id as Ids.AccountId,
  name: row.name,
  createdAt: row.created_at
})

export interface ApiKeyRow {
  readonly id: string
  readonly account_id: string
  readonly name: string
  readonly display_prefix: string
  readonly hash: string
  readonly scopes: ReadonlyArray<string>
  readonly created_at: Date
  readonly revoked_at: Date | null
  readonly rate_limit_per_minute: number | null
  readonly usage_limit: number | null
  readonly usage_count: number
}

const apiKeyColumnNames = [
  "id",
  "account_id",
  "name",
  "display_prefix",
  "hash",
  "scopes",
  "created_at",
  "revoked_at",
  "rate_limit_per_minute",
  "usage_limit",
  "usage_count"
] as const

/** `alias.col, ...` for the api_keys columns an ApiKeyRow holds. */
export const apiKeyColumns = (alias: string): string => apiKeyColumnNames.map((column) => `${alias}.${column}`).join(", ")

/** `alias.col AS <prefix>col, ...`: the api_keys columns beside another table's in one row. */
export const prefixedApiKeyColumns = (alias: string, prefix: string): string =>
  apiKeyColumnNames.map((column) => `${alias}.${column} AS ${prefix}${column}`).join(", ")

/** The ApiKeyRow a `prefixedApiKeyColumns` selection holds. */
export const prefixedApiKeyRow = (row: object, prefix: string): ApiKeyRow =>
  Object.fromEntries(
    apiKeyColumnNames.map((column) => [column, (row as Record<string, unknown>)[`${prefix}${column}`]])
  ) as unknown as ApiKeyRow

export const toApiKey = (row: ApiKeyRow): AccountStore.ApiKeyRecord => ({
  id: row.id as Ids.ApiKeyId,
  accountId: row.account_id as Ids.AccountId,
  name: row.name,
  displayPrefix: row.display_prefix,
  hash: row.hash,
  scopes: row.scopes as ReadonlyArray<Scope.Scope>,
  createdAt: row.created_at,
  revokedAt: row.revoked_at,
  rateLimitPerMinute: row.rate_limit_per_minute,
  usageLimit: row.usage_limit,
  usageCount: row.usage_count
})

/** A key's request window lasts this long from its first counted request. */
const KEY_WINDOW_MS = 60_000

/** What a key's counted request answers: the key row and its window after the count. */
export const toAuthenticated = (key: ApiKeyRow, windowStarted: Date, requestsInWindow: number): AccountStore.Authenticated => ({
  key: toApiKey(key),
  requestsInWindow,
  windowResetsAt: new Date(windowStarted.getTime() + KEY_WINDOW_MS)
})

export interface TaskRow {
  readonly id: string
  readonly account_id: string
  readonly api_key_id: string | null
  readonly model: string
  readonly input: TaskStore.TaskRecord["input"]
  readonly status: string
  readonly error_code: string | null
  readonly price_micros: Int8
  readonly unit_micros: Int8
  readonly quantity: number
  readonly settlement: string
  readonly charged_micros: Int8 | null
  readonly assets: ReadonlyArray<TaskStore.StoredAsset>
  readonly upstream_ref: string | null
  readonly provider: string | null
  readonly attempts: number
  readonly created_at: Date
  readonly updated_at: Date
  readonly deadline_at: Date
  readonly lease_token: string | null
  readonly lease_expires_at: Date | null
  readonly traceparent: string | null
  readonly cancel_requested_at: Date | null
  readonly progress: number | null
}

const taskColumnNames = [
  "id",
  "account_id",
  "api_key_id",
  "model",
  "input",
  "status",
  "error_code",
  "price_micros",
  "unit_micros",
  "quantity",
  "settlement",
  "charged_micros",
  "assets",
  "upstream_ref",
  "provider",
  "attempts",
  "created_at",
  "updated_at",
  "deadline_at",
  "lease_token",
  "lease_expires_at",
  "traceparent",
  "cancel_requested_at",
  "progress"
] as const

/** `alias.col, ...` for the tasks columns a TaskRow holds: what every query returning tasks selects. */
export const taskColumns = (alias: string): string => taskColumnNames.map((column) => `${alias}.${column}`).join(", ")

const money = (value: Int8): Money.Micros => Number(value) as Money.Micros

export const toTask = (row: TaskRow): TaskStore.TaskRecord => ({
  id: row.id as Ids.TaskId,
  accountId: row.account_id as Ids.AccountId,
  apiKeyId: row.api_key_id as Ids.ApiKeyId | null,
  model: row.model,
  input: row.input,
  status: row.status as TaskStatus.TaskStatus,
  errorCode: row.error_code,
  priceMicros: money(row.price_micros),
  unitMicros: money(row.unit_micros),
  quantity: row.quantity,
  settlement: row.settlement as TaskStore.Settlement,
  chargedMicros: row.charged_micros === null ? null : money(row.charged_micros),
  assets: row.assets,
  upstreamRef: row.upstream_ref,
  provider: row.provider,
  attempts: row.attempts,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  deadlineAt: row.deadline_at,
  ...(row.traceparent === null ? {} : { traceparent: row.traceparent }),
  cancelRequestedAt: row.cancel_requested_at,
  ...(typeof row.progress === "number" ? { progress: row.progress } : {})
})

export interface EntryRow {
  readonly id: string
  readonly account_id: string
  readonly kind: string
  readonly amount_micros: Int8
  readonly task_id: string | null
  readonly chat_request_id: string | null
  readonly note: string | null
  readonly created_at: Date
}

export const toEntry = (row: EntryRow): LedgerStore.LedgerEntry => ({
  id: row.id as Ids.LedgerEntryId,
  accountId: row.account_id as Ids.AccountId,
  kind: row.kind as LedgerStore.EntryKind,
  amountMicros: Number(row.amount_micros),
  taskId: row.task_id as Ids.TaskId | null,
  chatRequestId: row.chat_request_id as Ids.ChatRequestId | null,
  note: row.note,
  createdAt: row.created_at
})

export const toBalances = (balance: Int8, reserved: Int8, review: boolean): LedgerStore.Balances => ({
  balanceMicros: Number(balance),
  reservedMicros: money(reserved),
  availableMicros: Number(balance) - Number(reserved),
  paymentReview: review
})

export interface MediaRow {
  readonly reference: string
  readonly account_id: string
  readonly content_type: string
  readonly size_bytes: Int8
  readonly sha256: string
  readonly blob_key: string
  readonly created_at: Date
  readonly expires_at: Date
}

export const toMedia = (row: MediaRow): MediaStore.MediaRecord => ({
  reference: row.reference as MediaReference.MediaReference,
  accountId: row.account_id as Ids.AccountId,
  contentType: row.content_type,
  sizeBytes: Number(row.size_bytes),
  sha256: row.sha256,
  blobKey: row.blob_key,
  createdAt: row.created_at,
  expiresAt: row.expires_at
})

export interface ResultRow {
  readonly id: string
  readonly account_id: string
  readonly task_id: string
  readonly content_type: string
  readonly size_bytes: Int8
  readonly sha256: string
  readonly blob_key: string
  readonly created_at: Date
  readonly expires_at: Date
}

export const toResult = (row: ResultRow): MediaStore.ResultRecord => ({
  id: row.id as Ids.ResultId,
  accountId: row.account_id as Ids.AccountId,
  taskId: row.task_id as Ids.TaskId,
  contentType: row.content_type,
  sizeBytes: Number(row.size_bytes),
  sha256: row.sha256,
  blobKey: row.blob_key,
  createdAt: row.created_at,
  expiresAt: row.expires_at
})

/** The limit and credit refusals that task admission and chat opening share, as their functions report them. */
export type Refusal =
  | { readonly _tag: "RateLimited"; readonly retryAfterSeconds: number }
  | { readonly _tag: "InsufficientCredits"; readonly availableMicros: number }
  | { readonly _tag: "KeyUsageExceeded" | "ConcurrencyLimited" | "PaymentReviewRequired" }

export type RefusalOutcome = Refusal["_tag"]

/** A refusal from its outcome tag and the numeric `detail` column that carries its figure. */
export const toRefusal = (outcome: RefusalOutcome, detail: unknown): Refusal => {
  switch (outcome) {
    case "RateLimited":
      return { _tag: outcome, retryAfterSeconds: Number(detail) }
    case "InsufficientCredits":
      return { _tag: outcome, availableMicros: Number(detail) }
    default:
      return { _tag: outcome }
  }
}
