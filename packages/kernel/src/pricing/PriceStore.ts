/**
 * Storage port for the task price list, shared by every process on one store: an append-only
 * history of versions (1, 2, 3, ...), the current list being the highest. The store keeps the
 * list as raw JSON data and checks nothing about it; the Pricer validates against the Catalog
 * (`Pricer.layerStore`), so a list saved by a process of another release stays readable.
 *
 * Concurrency promises every store keeps, across processes sharing it:
 * - `save` is a compare-and-set on the version it was based on: it writes version
 *   `expectedVersion + 1` (1 on an empty store) only while the current version is still
 *   `expectedVersion`, else PriceListConflict and nothing is written. Of concurrent saves based
 *   on one version exactly one succeeds, so no change is lost; the others read again and retry.
 * - Versions are never rewritten or removed: a version number names one list for good.
 *
 * Changes made elsewhere reach a process through `subscribe` (storage-pg on PostgreSQL:
 * NOTIFY/LISTEN; PGlite and memory: within the process). A notification can be missed (a
 * dropped connection), so a follower also compares `version` now and then.
 *
 * @example
 * ```ts
 * const raise = (slug: string, priceMicros: number) =>
 *   Effect.gen(function*() {
 *     const store = yield* PriceStore
 *     const stored = yield* store.current
 *     const list = stored?.list as PriceList.PriceList | undefined
 *     const next = { models: { ...list?.models, [slug]: { enabled: true, priceMicros } } }
 *     return yield* store.save(stored?.version, next) // PriceListConflict: read again and redo
 *   })
 * ```
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

export class PriceStore extends Context.Service<PriceStore, {
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
}>()("@taskmeter/kernel/PriceStore") {}
