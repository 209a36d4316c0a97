import { Effect } from "effect"
import { describe, expect } from "@effect/vitest"
import * as Ids from "../domain/Ids.ts"
import type { AccountId } from "../domain/Ids.ts"
import * as MediaReference from "../media/MediaReference.ts"
import { MediaStore } from "../media/MediaStore.ts"
import type { MediaRecord } from "../media/MediaStore.ts"
import type { Case } from "./Case.ts"
import { admission, admitted, fundedAccount, makeAccount, newTask, resultRecord, T0, USD } from "./Fixtures.ts"

const media = (accountId: AccountId): MediaRecord => {
  const reference = MediaReference.make()
  return {
    reference,
    accountId,
    contentType: "image/png",
    sizeBytes: 1234,
    sha256: "a".repeat(64),
    blobKey: `media/${MediaReference.uuidOf(reference)}`,
    createdAt: T0
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
      "missingMedia names every reference the account does not own",
      Effect.gen(function* () {
        const { store, mine, own, foreign } = yield* uploadsOfTwoAccounts
        const unknown = MediaReference.make()
        expect(yield* store.missingMedia(mine, [])).toEqual([])
        expect(yield* store.missingMedia(mine, [own.reference])).toEqual([])
        const missing = yield* store.missingMedia(mine, [own.reference, foreign.reference, unknown])
        expect(missing.slice().sort()).toEqual([foreign.reference, unknown].sort())
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
