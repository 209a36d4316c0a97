/**
 * Builders shared by the conformance cases: accounts, tasks and admission requests with
 * generous defaults, and a fixed clock origin so every case passes `now` explicitly.
 */
import { createHash, randomUUID } from "node:crypto"
import { Effect } from "effect"
import { expect } from "@effect/vitest"
import { AccountStore } from "../accounts/AccountStore.ts"
import type { ApiKeyRecord } from "../accounts/AccountStore.ts"
import * as Ids from "../domain/Ids.ts"
import type { AccountId, TaskId } from "../domain/Ids.ts"
import type { KeyCheck } from "../accounts/KeyCheck.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import type { Balances, LedgerEntry } from "../ledger/LedgerStore.ts"
import type { ResultRecord } from "../media/MediaStore.ts"
import * as Retention from "../media/Retention.ts"
import { micros } from "../domain/Money.ts"
import type { Micros } from "../domain/Money.ts"
import * as Scope from "../accounts/Scope.ts"
import { TaskStore } from "../tasks/TaskStore.ts"
import type {
  AdmissionLimits,
  AdmissionRequest,
  AdmissionResult,
  Claim,
  KeyedAdmissionRequest,
  NewTask,
  TaskRecord
} from "../tasks/TaskStore.ts"

export const T0 = new Date("2030-01-01T00:00:00.000Z")

/** T0 plus some seconds. */
export const at = (seconds: number): Date => new Date(T0.getTime() + seconds * 1000)

export const USD = 1_000_000

export const openLimits: AdmissionLimits = {
  submissionsPerMinute: 1_000_000,
  maxUnfinishedTasks: 1_000_000,
  keyUsageLimit: null
}

export const makeAccount = (name = "acme") =>
  AccountStore.use((store) => store.createAccount({ id: Ids.makeAccountId(), name, createdAt: T0 }))

/** An account holding `credits` micros from one grant. */
export const fundedAccount = (credits: number, name = "acme") =>
  Effect.gen(function* () {
    const account = yield* makeAccount(name)
    if (credits > 0) yield* grant(account.id, credits)
    return account.id
  })

export const grant = (accountId: AccountId, amount: number, externalRef?: string) =>
  Effect.map(
    LedgerStore.use((store) => store.grant({ accountId, amountMicros: amount, note: "top-up", externalRef })),
    defined
  )

export const refund = (accountId: AccountId, amount: number, externalRef?: string) =>
  Effect.map(
    LedgerStore.use((store) => store.refund({ accountId, amountMicros: amount, note: "refund", externalRef })),
    defined
  )

export const balances = (accountId: AccountId) =>
  Effect.map(
    LedgerStore.use((store) => store.balances(accountId)),
    defined
  )

export const expectBalances = (
  accountId: AccountId,
  expected: { readonly balance: number; readonly reserved: number; readonly review?: boolean }
) =>
  Effect.map(balances(accountId), (actual): Balances => {
    expect({
      balance: actual.balanceMicros,
      reserved: actual.reservedMicros,
      available: actual.availableMicros,
      review: actual.paymentReview
    }).toEqual({
      balance: expected.balance,
      reserved: expected.reserved,
      available: expected.balance - expected.reserved,
      review: expected.review ?? false
    })
    return actual
  })

/** Every entry of the account, newest first, walking all pages. */
export const allEntries = (accountId: AccountId) =>
  Effect.gen(function* () {
    const store = yield* LedgerStore
    const entries: Array<LedgerEntry> = []
    let before: string | undefined
    for (;;) {
      const page = defined(yield* store.entries(accountId, { limit: 100, before }))
      entries.push(...page.entries)
      if (page.nextCursor === null) return entries
      before = page.nextCursor
    }
  })

export const entriesOfTask = (accountId: AccountId, taskId: string) =>
  Effect.map(allEntries(accountId), (entries) => entries.filter((entry) => entry.taskId === taskId))

/** The auditor finds nothing: the cached figures add up to the journal. */
export const expectBooksBalance = Effect.gen(function* () {
  const findings = yield* (yield* LedgerStore).audit
  expect(findings).toEqual([])
})

export const newTask = (accountId: AccountId, overrides: Partial<NewTask> = {}): NewTask => {
  const price = overrides.priceMicros ?? micros(USD)
  return {
    id: Ids.makeTaskId(),
    accountId,
    apiKeyId: null,
    model: "conformance-image",
    input: { prompt: "a lighthouse at dusk", aspectRatio: "9:16" },
    priceMicros: price,
    unitMicros: price,
    quantity: 1,
    settlement: "fixed",
    createdAt: T0,
    deadlineAt: at(3600),
    ...overrides
  }
}

/** A result file's record for the task, made at T0 unless given, expiring after the default retention unless given. */
export const resultRecord = (
  accountId: AccountId,
  taskId: TaskId,
  createdAt = T0,
  expiresAt = Retention.expiresAt(createdAt, Retention.DEFAULT_DAYS)
): ResultRecord => {
  const id = Ids.makeResultId()
  return {
    id,
    accountId,
    taskId,
    contentType: "video/mp4",
    sizeBytes: 99,
    sha256: "b".repeat(64),
    blobKey: `results/${id}`,
    createdAt,
    expiresAt
  }
}

export const admission = (task: NewTask, overrides: Partial<Omit<AdmissionRequest, "task">> = {}): AdmissionRequest => ({
  task,
  idempotencyKey: `key-${randomUUID()}`,
  fingerprint: `fp-${task.model}-${task.priceMicros}`,
  idempotencyExpiresAt: new Date(task.createdAt.getTime() + 24 * 3600 * 1000),
  limits: openLimits,
  ...overrides
})

export const admit = (request: AdmissionRequest) => TaskStore.use((store) => store.admit(request))

/** Admits and insists on a new task. */
export const admitted = (request: AdmissionRequest) =>
  Effect.map(admit(request), (result): TaskRecord => {
    expect(result._tag).toBe("Admitted")
    return (result as Extract<AdmissionResult, { _tag: "Admitted" }>).task
  })

/** Claims exactly this task (the store must offer it) with a lease of `leaseMs`. */
export const claimTask = (taskId: string, now: Date, leaseMs = 60_000, workerId = "worker-a") =>
  Effect.gen(function* () {
    const claims = yield* (yield* TaskStore).claim({ workerId, limit: 1000, leaseMs, now })
    const claim = claims.find((c) => c.task.id === taskId)
    expect(claim, `task ${taskId} should be claimable`).toBeDefined()
    return claim as Claim
  })

export const makeKey = (accountId: AccountId, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord => {
  const secret = `tm_${randomUUID()}`
  return {
    id: Ids.makeApiKeyId(),
    accountId,
    name: "default",
    displayPrefix: secret.slice(0, 7),
    hash: createHash("sha256").update(secret).digest("hex"),
    scopes: Scope.all,
    createdAt: T0,
    revokedAt: null,
    rateLimitPerMinute: null,
    usageLimit: null,
    usageCount: 0,
    ...overrides
  }
}

/** Inserts a key of the account, with all scopes and no limits unless overridden. */
export const insertKey = (accountId: AccountId, overrides: Partial<ApiKeyRecord> = {}) =>
  Effect.gen(function* () {
    const key = makeKey(accountId, overrides)
    yield* (yield* AccountStore).insertApiKey(key)
    return key
  })

export type KeyedTask = KeyedAdmissionRequest["task"]

/** A task as a keyed admission names it: without an owner, which the key decides. */
export const keyedTask = (overrides: Partial<KeyedTask> = {}): KeyedTask => {
  const { accountId: _owner, apiKeyId: _key, ...task } = newTask(Ids.makeAccountId(), overrides)
  return task
}

/**
 * An admission on behalf of the key with `hash`, checked at the task's `createdAt` for
 * jobs:create, with open limits and a default key rate too high to matter unless overridden.
 */
export const keyedAdmission = (
  hash: string,
  overrides: Partial<Omit<KeyedAdmissionRequest, "key" | "task">> & {
    readonly task?: Partial<KeyedTask> | undefined
    readonly check?: Partial<KeyCheck> | undefined
  } = {}
): KeyedAdmissionRequest => {
  const { task: taskOverrides, check, ...rest } = overrides
  const task = keyedTask(taskOverrides)
  const { keyUsageLimit: _fromTheKey, ...limits } = openLimits
  return {
    key: { hash, now: task.createdAt, scope: "jobs:create", defaultRateLimitPerMinute: 1_000_000, ...check },
    task,
    idempotencyKey: `key-${randomUUID()}`,
    fingerprint: `fp-${task.model}-${task.priceMicros}`,
    idempotencyExpiresAt: new Date(task.createdAt.getTime() + 24 * 3600 * 1000),
    limits,
    ...rest
  }
}

export const admitKeyed = (request: KeyedAdmissionRequest) => TaskStore.use((store) => store.admit(request))

export const defined = <A>(value: A | undefined): A => {
  expect(value).toBeDefined()
  return value as A
}

export const price = (amount: number): Micros => micros(amount)
