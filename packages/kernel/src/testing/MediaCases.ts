import { Effect } from "effect"
import { describe, expect } from "@effect/vitest"
import * as Ids from "../domain/Ids.ts"
import type { AccountId } from "../domain/Ids.ts"
import * as MediaReference from "../media/MediaReference.ts"
import { MediaStore } from "../media/MediaStore.ts"
import type { MediaRecord } from "../media/MediaStore.ts"
import type { Case } from "./Case.ts"
import { admission, admitted, at, fundedAccount, makeAccount, newTask, resultRecord, T0, USD } from "./Fixtures.ts"

const media = (accountId: AccountId): MediaRecord => {
  const reference = MediaReference.make()
  return {
    reference,
    accountId,
    contentType: "image/png",
    sizeBytes: 1234,
    sha256: "a".repeat(64),
    blobKey: `media/${MediaReference.uuidOf(reference)}`,
    createdAt: T0,
    expiresAt: at(3600)
  }
}

/** Two accounts, "mine" and "theirs", each with one upload stored. */
const uploadsOfTwoAccounts = Effect.gen(function* () {
  const store = yield* MediaStore
  const mine = (yield* makeAccount()).id
  const theirs = (yield* makeAccount("theirs")).id
  const own = media(mine)
  const foreign = media(theirs)
  yield* store.putMedia(own)
  yield* store.putMedia(foreign)
  return { store, mine, own, foreign }
})

export const mediaCases = (test: Case) =>
  describe("MediaStore", () => {
    test(
      "media is read only by the account that uploaded it",
      Effect.gen(function* () {
        const { store, mine, own, foreign } = yield* uploadsOfTwoAccounts
        expect(yield* store.getMedia(mine, own.reference)).toEqual(own)
        expect(yield* store.getMedia(mine, foreign.reference)).toBeUndefined()
        expect(yield* store.getMedia(mine, MediaReference.make())).toBeUndefined()
      })
    )

    test(
      "missingMedia names every reference the account does not own, and those of its own expired",
      Effect.gen(function* () {
        const { store, mine, own, foreign } = yield* uploadsOfTwoAccounts
        const unknown = MediaReference.make()
        const none = { missing: [], expired: [] }
        expect(yield* store.missingMedia(mine, [], at(0))).toEqual(none)
        expect(yield* store.missingMedia(mine, [own.reference], at(3599))).toEqual(none)
        const { expired, missing } = yield* store.missingMedia(mine, [own.reference, foreign.reference, unknown], at(0))
        expect(missing.slice().sort()).toEqual([foreign.reference, unknown].sort())
        expect(expired).toEqual([])
        // At its expiry, the upload is expired, and another account's is still just missing.
        expect(yield* store.missingMedia(mine, [own.reference, foreign.reference], at(3600))).toEqual({
          missing: [foreign.reference],
          expired: [own.reference]
        })
      })
    )

    test(
      "results are read only by the task's account",
      Effect.gen(function* () {
        const store = yield* MediaStore
        // A result belongs to an admitted task (a SQL store holds it to that with a foreign key).
        const mine = yield* fundedAccount(USD)
        const theirs = (yield* makeAccount("theirs")).id
        const task = yield* admitted(admission(newTask(mine)))
        const own = resultRecord(mine, task.id)
        yield* store.putResult(own)
        expect(yield* store.getResult(mine, own.id)).toEqual(own)
        expect(yield* store.getResult(theirs, own.id)).toBeUndefined()
        expect(yield* store.getResult(mine, Ids.makeResultId())).toBeUndefined()
      })
    )
  })
