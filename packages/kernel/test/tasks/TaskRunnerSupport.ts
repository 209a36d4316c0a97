/**
 * The TaskRunner's services over storage-memory (or a wrapped copy of it), and the callers,
 * keys and submissions its tests make.
 */
import { Effect, Layer, Redacted } from "effect"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as Accounts from "../../src/accounts/Accounts.ts"
import { AccountStore } from "../../src/accounts/AccountStore.ts"
import * as Catalog from "../../src/catalog/Catalog.ts"
import * as Ledger from "../../src/ledger/Ledger.ts"
import * as MediaReference from "../../src/media/MediaReference.ts"
import { MediaStore } from "../../src/media/MediaStore.ts"
import { micros } from "../../src/domain/Money.ts"
import * as Pricer from "../../src/pricing/Pricer.ts"
import * as TaskRunner from "../../src/tasks/TaskRunner.ts"
import { isKeyed, TaskStore } from "../../src/tasks/TaskStore.ts"

export const TEXT_TO_IMAGE = "alpha-pro-text-to-image-economy"
export const EDIT = "alpha-pro-edit-economy"
export const UNSERVED = "song-lyrics"

export const layerWith = (
  options: Partial<TaskRunner.Options> = {},
  stores = MemoryStore.layer,
  catalog: Layer.Layer<Catalog.Catalog> = Catalog.layer
) =>
  Layer.mergeAll(
    TaskRunner.layer({ executorAvailable: (model) => model !== UNSERVED, ...options }).pipe(Layer.provideMerge(Accounts.layer())),
    Ledger.layer
  ).pipe(Layer.provideMerge(Pricer.layerDefault), Layer.provideMerge(catalog), Layer.provideMerge(stores), Layer.orDie)

/** The memory store, counting the store calls that authentication and admission make (`admitKeyed`: a key's admit). */
export const countingStores = () => {
  const calls = { authenticate: 0, admitKeyed: 0, admit: 0, findIdempotent: 0 }
  const counted = Layer.mergeAll(
    Layer.effect(
      TaskStore,
      Effect.gen(function* () {
        const store = yield* TaskStore
        return TaskStore.of({
          ...store,
          admit: (request) => Effect.suspend(() => (isKeyed(request) ? calls.admitKeyed++ : calls.admit++, store.admit(request))),
          findIdempotent: (...args) => Effect.suspend(() => (calls.findIdempotent++, store.findIdempotent(...args)))
        })
      })
    ),
    Layer.effect(
      AccountStore,
      Effect.map(AccountStore, (store) =>
        AccountStore.of({
          ...store,
          authenticate: (hash, now) => Effect.suspend(() => (calls.authenticate++, store.authenticate(hash, now)))
        })
      )
    )
  ).pipe(Layer.provideMerge(MemoryStore.layer))
  return { calls, stores: counted }
}

/** A key of a new account holding `credits` micros, and the caller it stands for; nothing authenticated yet. */
export const keyOf = (credits: number, keyOptions: Accounts.KeyOptions = {}) =>
  Effect.gen(function* () {
    const accounts = yield* Accounts.Accounts
    const { account } = yield* accounts.create({ name: "acme", credits: micros(credits) })
    const { record, secret } = yield* accounts.createKey(account.id, keyOptions)
    const who: Accounts.Caller = {
      accountId: account.id,
      apiKeyId: record.id,
      scopes: record.scopes,
      keyUsageLimit: record.usageLimit
    }
    return { secret, caller: who }
  })

/** A caller of a new account holding `credits` micros. */
export const caller = (credits: number, keyOptions: Accounts.KeyOptions = {}) =>
  Effect.flatMap(keyOf(credits, keyOptions), ({ secret }) => Accounts.Accounts.use((accounts) => accounts.authenticate(secret)))

export const reserved = (who: Accounts.Caller) =>
  Effect.map(
    Ledger.Ledger.use((ledger) => ledger.balances(who.accountId)),
    (balances) => balances.reservedMicros
  )

export const submission = (overrides: Partial<TaskRunner.Submission> = {}): TaskRunner.Submission => ({
  model: TEXT_TO_IMAGE,
  input: { prompt: "a lighthouse at dusk" },
  idempotencyKey: "key-1",
  ...overrides
})

const NEVER = new Date(Date.UTC(9999, 0, 1))

/** A media upload of the caller's account, as POST /api/v1/media records it. */
export const uploaded = (who: Accounts.Caller) =>
  Effect.gen(function* () {
    const reference = MediaReference.make()
    yield* MediaStore.use((store) =>
      store.putMedia({
        reference,
        accountId: who.accountId,
        contentType: "image/png",
        sizeBytes: 10,
        sha256: "0".repeat(64),
        blobKey: `media/${MediaReference.uuidOf(reference)}`,
        createdAt: new Date(0),
        // Usable whatever clock a test runs on.
        expiresAt: NEVER
      })
    )
    return reference
  })

/** A presented key, as POST /api/v1/jobs hands it to `submit`. */
export const keyed = (secret: string) => TaskRunner.presentedKey(Redacted.make(secret))

/** The shipped catalog, counting the submissions it validates. */
export const countingCatalog = () => {
  const calls = { validate: 0 }
  const catalog = Layer.effect(
    Catalog.Catalog,
    Effect.map(Catalog.Catalog, (shipped) =>
      Catalog.Catalog.of({
        ...shipped,
        validate: (model, input) => Effect.suspend(() => (calls.validate++, shipped.validate(model, input)))
      })
    )
  ).pipe(Layer.provide(Catalog.layer))
  return { calls, catalog }
}
