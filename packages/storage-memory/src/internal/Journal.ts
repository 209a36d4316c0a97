/**
 * Appending to the journal and moving the cached figures with it, the one place each entry
 * kind's effect is written (see the table in LedgerStore); a charge also adds to the account's
 * spend line of its UTC day and model.
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
  /** A charge's model: the task's or the chat request's. */
  readonly model?: string | undefined
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
  if (entry.kind === "charge") addSpend(row, entry, change.model)
  return entry
}

const addSpend = (row: AccountRow, entry: LedgerStore.LedgerEntry, model: string | undefined) => {
  if (model === undefined) throw new RangeError(`The charge ${entry.id} names no model`)
  const day = entry.createdAt.toISOString().slice(0, 10)
  const key = `${day} ${model}`
  const line = row.spend.get(key) ?? { day, model, taskMicros: 0, chatMicros: 0 }
  if (entry.taskId !== null) line.taskMicros += entry.amountMicros
  else line.chatMicros += entry.amountMicros
  row.spend.set(key, line)
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
