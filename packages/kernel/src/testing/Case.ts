import type { Effect } from "effect"
import type { AccountStore } from "../accounts/AccountStore.ts"
import type { BlobStore } from "../media/BlobStore.ts"
import type { ChatPriceStore } from "../chat/ChatPriceStore.ts"
import type { BudgetStore } from "../pricing/BudgetStore.ts"
import type { LedgerStore } from "../ledger/LedgerStore.ts"
import type { MediaStore } from "../media/MediaStore.ts"
import type { PriceStore } from "../pricing/PriceStore.ts"
import type { StoreHealth } from "../observability/StoreHealth.ts"
import type { TaskStore } from "../tasks/TaskStore.ts"

/** Every storage port; a store under test provides all of them from one layer. */
export type Stores =
  | AccountStore
  | LedgerStore
  | TaskStore
  | MediaStore
  | BlobStore
  | PriceStore
  | ChatPriceStore
  | BudgetStore
  | StoreHealth

/** Registers one conformance case, run against a fresh store. */
export type Case = (title: string, body: Effect.Effect<void, unknown, Stores>) => void
