/**
 * Every storage port of the kernel, kept in process memory: for tests, examples and a server
 * that may forget everything when it stops. One `layer` provides all the ports over one
 * shared state, so an admission's reservation and its task are written in the same step.
 */
import { Context, Effect, Layer } from "effect"
import type { Ids } from "@taskmeter/kernel"
import {
  AccountStore,
  BlobStore,
  BudgetStore,
  ChatPriceStore,
  ChatStore,
  LedgerStore,
  MediaStore,
  PaymentStore,
  PriceStore,
  SessionStore,
  StoreHealth,
  TaskStore,
  UserStore
} from "@taskmeter/kernel"
import * as Chat from "./internal/MemoryChatStore.ts"
import * as Accounts from "./internal/MemoryAccountStore.ts"
import * as Blobs from "./internal/MemoryBlobStore.ts"
import * as Budgets from "./internal/MemoryBudgetStore.ts"
import * as Ledger from "./internal/MemoryLedgerStore.ts"
import * as Media from "./internal/MemoryMediaStore.ts"
import * as Payments from "./internal/MemoryPaymentStore.ts"
import * as Prices from "./internal/MemoryPriceStore.ts"
import * as Health from "./internal/MemoryStoreHealth.ts"
import * as State from "./internal/State.ts"
import * as Tasks from "./internal/MemoryTaskStore.ts"
import * as Sessions from "./internal/MemorySessionStore.ts"
import * as Users from "./internal/MemoryUserStore.ts"

export type Stores =
  | AccountStore.AccountStore
  | LedgerStore.LedgerStore
  | TaskStore.TaskStore
  | MediaStore.MediaStore
  | BlobStore.BlobStore
  | ChatStore.ChatStore
  | PriceStore.PriceStore
  | ChatPriceStore.ChatPriceStore
  | BudgetStore.BudgetStore
  | PaymentStore.PaymentStore
  | UserStore.UserStore
  | SessionStore.SessionStore
  | StoreHealth.StoreHealth

const contextOf = (state: State.State): Effect.Effect<Context.Context<Stores>> =>
  Effect.map(Effect.all([Prices.make(state), Prices.make(state, "chatPriceLists")]), ([prices, chatPrices]) => {
    const accounts = Accounts.make(state)
    return Context.make(AccountStore.AccountStore, accounts).pipe(
      Context.add(LedgerStore.LedgerStore, Ledger.make(state)),
      Context.add(TaskStore.TaskStore, Tasks.make(state, accounts)),
      Context.add(MediaStore.MediaStore, Media.make(state)),
      Context.add(BlobStore.BlobStore, Blobs.make(state)),
      Context.add(ChatStore.ChatStore, Chat.make(state)),
      Context.add(PriceStore.PriceStore, prices),
      Context.add(ChatPriceStore.ChatPriceStore, chatPrices),
      Context.add(BudgetStore.BudgetStore, Budgets.make(state)),
      Context.add(PaymentStore.PaymentStore, Payments.make(state)),
      Context.add(UserStore.UserStore, Users.make(state)),
      Context.add(SessionStore.SessionStore, Sessions.make(state)),
      Context.add(StoreHealth.StoreHealth, Health.make(state))
    )
  })

/** A fresh, empty store each time the layer is built. */
export const layer: Layer.Layer<Stores> = Layer.effectContext(Effect.suspend(() => contextOf(State.make())))

/**
 * Test-only access behind the ports, for proving that checks catch what the ports forbid
 * (the conformance suite's auditor case).
 */
export class Testing extends Context.Service<
  Testing,
  {
    /** Moves the cached balance without a journal entry. */
    readonly tamperBalance: (accountId: Ids.AccountId, deltaMicros: number) => Effect.Effect<void>
  }
>()("@taskmeter/storage-memory/Testing") {}

export const layerTesting: Layer.Layer<Stores | Testing> = Layer.effectContext(
  Effect.suspend(() => {
    const state = State.make()
    return Effect.map(
      contextOf(state),
      Context.add(
        Testing,
        Testing.of({
          tamperBalance: (accountId, deltaMicros) =>
            Effect.sync(() => {
              const row = state.accounts.get(accountId)
              if (row !== undefined) row.balance += deltaMicros
            })
        })
      )
    )
  })
)

/** The conformance suite's `corrupt` hook. */
export const corruptBalance = (accountId: Ids.AccountId): Effect.Effect<void, never, Testing> =>
  Testing.use((testing) => testing.tamperBalance(accountId, 1))
