/**
 * Storage port for the task price list, shared by every process on one store: an append-only
 * history of versions, the current being the highest, kept as raw JSON (the Pricer validates it).
 * `save` is a compare-and-set on the version it was based on (else PriceListConflict, nothing
 * written), so of concurrent saves exactly one wins; versions are never rewritten. `subscribe`
 * wakes on saves elsewhere and may miss one. Policy: docs/decisions.md, Prices.
 */
import { Context, Data } from "effect"
import type { Effect, Scope } from "effect"
import type { StoreUnavailable } from "../domain/StoreError.ts"

/** One version of the price list as it was saved. */
export interface StoredPriceList {
  /** 1 for the first list saved, one more for each later one. */
  readonly version: number
  /** Raw price-list JSON data, as given to `save`. */
  readonly list: unknown
  /** When the store wrote it (the store's clock). */
  readonly changedAt: Date
}

/** The list changed since the version a save was based on: nothing was written. */
export class PriceListConflict extends Data.TaggedError("PriceListConflict")<{
  /** The version the refused save was based on; undefined for a save onto an empty store. */
  readonly expectedVersion: number | undefined
}> {
  override get message(): string {
    return this.expectedVersion === undefined
      ? "The price list was saved by someone else first: the store is no longer empty."
      : `The price list changed after version ${this.expectedVersion}: read it again and redo the change.`
  }
}

export class PriceStore extends Context.Service<
  PriceStore,
  {
    /** The highest version, or undefined while nothing was ever saved. */
    readonly current: Effect.Effect<StoredPriceList | undefined, StoreUnavailable>
    /** The highest version's number alone (undefined when empty): a cheap check for followers. */
    readonly version: Effect.Effect<number | undefined, StoreUnavailable>
    /**
     * Saves `list` as the version after `expectedVersion` (undefined: the store must be empty),
     * only if that is still the current version; answers the new version's number.
     */
    readonly save: (
      expectedVersion: number | undefined,
      list: unknown
    ) => Effect.Effect<{ readonly version: number }, PriceListConflict | StoreUnavailable>
    /**
     * Listens for saves for as long as the scope is open, and answers the wait for the next one:
     * it completes when a save was made since the subscription began or since it last completed,
     * here and, where the store can tell, in other processes. Every subscriber is woken, each on
     * its own. Saves in a row may wake it once, and a wake-up may find no new version: read
     * `version` to know.
     */
    readonly subscribe: Effect.Effect<Effect.Effect<void>, never, Scope.Scope>
  }
>()("@taskmeter/kernel/PriceStore") {}
