import type { Effect } from "effect"
import type { AccountStore } from "../AccountStore.ts"
import type { BlobStore } from "../BlobStore.ts"
import type { BudgetStore } from "../BudgetStore.ts"
import type { LedgerStore } from "../LedgerStore.ts"
import type { MediaStore } from "../MediaStore.ts"
import type { PriceStore } from "../PriceStore.ts"
import type { TaskStore } from "../TaskStore.ts"

/** Every storage port; a store under test provides all of them from one layer. */
export type Stores = AccountStore | LedgerStore | TaskStore | MediaStore | BlobStore | PriceStore | BudgetStore

/** Registers one conformance case, run against a fresh store. */
export type Case = (title: string, body: Effect.Effect<void, unknown, Stores>) => void
