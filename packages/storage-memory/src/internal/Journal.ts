/**
 * Appending to the journal and moving the cached figures with it, the one place each entry
 * kind's effect is written (see the table in LedgerStore).
 */
import { Ids } from "@taskmeter/kernel"
import type { LedgerStore } from "@taskmeter/kernel"
import type { AccountRow, State } from "./State.ts"

export interface Append {
  readonly kind: LedgerStore.EntryKind
  readonly amountMicros: number
  readonly taskId?: LedgerStore.LedgerEntry["taskId"] | undefined
  readonly chatRequestId?: LedgerStore.LedgerEntry["chatRequestId"] | undefined
  readonly note?: string | null | undefined
  readonly createdAt: Date
}

export const append = (state: State, row: AccountRow, change: Append): LedgerStore.LedgerEntry => {
  if (!Number.isSafeInteger(change.amountMicros) || (change.kind !== "adjustment" && change.amountMicros < 0)) {
    throw new RangeError(`Invalid ${change.kind} amount: ${change.amountMicros}`)
  }
  const entry: LedgerStore.LedgerEntry = {
    id: Ids.makeLedgerEntryId(),
    accountId: row.account.id,
    kind: change.kind,
    amountMicros: change.amountMicros,
    taskId: change.taskId ?? null,
    chatRequestId: change.chatRequestId ?? null,
    note: change.note ?? null,
    createdAt: change.createdAt
  }
  row.balance += balanceEffect(entry)
  row.reserved += reservedEffect(entry)
  row.entries.push(entry)
  state.entryOwners.set(entry.id, row.account.id)
  return entry
}

export const balanceEffect = (entry: LedgerStore.LedgerEntry): number => {
  switch (entry.kind) {
    case "grant":
    case "adjustment":
      return entry.amountMicros
    case "charge":
    case "refund":
      return -entry.amountMicros
    default:
      return 0
  }
}

export const reservedEffect = (entry: LedgerStore.LedgerEntry): number => {
  switch (entry.kind) {
    case "reserve":
      return entry.amountMicros
    case "charge":
    case "release":
      return -entry.amountMicros
    default:
      return 0
  }
}
