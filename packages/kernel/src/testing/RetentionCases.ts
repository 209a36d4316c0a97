/**
 * Retention on every store: `putResult` and `putMedia` stamp the default expiry or the account's
 * own (`AccountStore.setResultRetention`, read when the file is stored), and `expireResults` and
 * `expireMedia` answer each due file once, earliest first, `limit` at a time, of any account,
 * keeping the records.
 */
import { Effect } from "effect"
import { describe, expect } from "@effect/vitest"
import { AccountStore } from "../accounts/AccountStore.ts"
import type { AccountId } from "../domain/Ids.ts"
import * as Ids from "../domain/Ids.ts"
import { MediaStore } from "../media/MediaStore.ts"
import type { MediaRecord, ResultRecord } from "../media/MediaStore.ts"
import * as MediaReference from "../media/MediaReference.ts"
import * as Retention from "../media/Retention.ts"
import type { Case } from "./Case.ts"
import { admission, admitted, at, fundedAccount, newTask, resultRecord, USD } from "./Fixtures.ts"

const DAY_SECONDS = 24 * 3600

/** An admitted task of the account (results name one). */
const taskOf = (accountId: AccountId) =>
  Effect.gen(function* () {
    const task = newTask(accountId)
    yield* admitted(admission(task))
    return task.id
  })

const put = (record: ResultRecord) => MediaStore.use((store) => store.putResult(record))

/** An upload of the account stored at `createdAt`, expiring at `expiresAt`. */
const upload = (accountId: AccountId, createdAt: Date, expiresAt: Date): MediaRecord => {
  const reference = MediaReference.make()
  return {
    reference,
    accountId,
    contentType: "image/png",
    sizeBytes: 10,
    sha256: "c".repeat(64),
    blobKey: `media/${MediaReference.uuidOf(reference)}`,
    createdAt,
    expiresAt
  }
}

const expireMedia = (now: Date, limit: number) =>
  Effect.map(
    MediaStore.use((store) => store.expireMedia(now, limit)),
    (due) => due.map(({ reference }) => reference)
  )

const expire = (now: Date, limit: number) =>
  Effect.map(
    MediaStore.use((store) => store.expireResults(now, limit)),
    (due) => due.map(({ id }) => id)
  )

export const retentionCases = (test: Case) =>
  describe("retention (MediaStore.putResult, expireResults; AccountStore.setResultRetention)", () => {
    test(
      "stamps the default expiry, or the account's own retention as set when the result is stored",
      Effect.gen(function* () {
        const accounts = yield* AccountStore
        const media = yield* MediaStore
        const accountId = yield* fundedAccount(5 * USD)
        const taskId = yield* taskOf(accountId)
        const byDefault = resultRecord(accountId, taskId, at(0))
        expect(yield* put(byDefault)).toEqual(Retention.expiresAt(at(0), Retention.DEFAULT_DAYS))
        expect((yield* media.getResult(accountId, byDefault.id))?.expiresAt).toEqual(byDefault.expiresAt)

        expect(yield* accounts.setResultRetention(accountId, 2)).toBe(true)
        expect(yield* accounts.getResultRetention(accountId)).toBe(2)
        const own = resultRecord(accountId, taskId, at(10))
        expect(yield* put(own)).toEqual(at(10 + 2 * DAY_SECONDS))
        expect((yield* media.getResult(accountId, own.id))?.expiresAt).toEqual(at(10 + 2 * DAY_SECONDS))
        // The earlier result keeps the expiry it was stored with.
        expect((yield* media.getResult(accountId, byDefault.id))?.expiresAt).toEqual(byDefault.expiresAt)

        expect(yield* accounts.setResultRetention(accountId, null)).toBe(true)
        expect(yield* accounts.getResultRetention(accountId)).toBe(null)
        const again = resultRecord(accountId, taskId, at(20))
        expect(yield* put(again)).toEqual(again.expiresAt)

        expect(yield* accounts.setResultRetention(Ids.makeAccountId(), 3)).toBe(false)
      })
    )

    test(
      "stamps uploads alike, and answers each due upload once, earliest first, keeping the records",
      Effect.gen(function* () {
        const media = yield* MediaStore
        const mine = yield* fundedAccount(5 * USD)
        const theirs = yield* fundedAccount(5 * USD, "theirs")
        yield* AccountStore.use((accounts) => accounts.setResultRetention(theirs, 1))
        const second = upload(mine, at(0), at(200))
        const first = upload(theirs, at(0), at(999_999))
        expect(yield* media.putMedia(second)).toEqual(at(200))
        // Their own retention: a day from the upload, whatever expiry was given.
        expect(yield* media.putMedia(first)).toEqual(at(DAY_SECONDS))
        expect((yield* media.getMedia(theirs, first.reference))?.expiresAt).toEqual(at(DAY_SECONDS))

        expect(yield* expireMedia(at(199), 10)).toEqual([])
        expect(yield* expireMedia(at(DAY_SECONDS), 1)).toEqual([second.reference])
        const due = yield* MediaStore.use((store) => store.expireMedia(at(DAY_SECONDS), 1))
        expect(due).toEqual([{ reference: first.reference, blobKey: first.blobKey }])
        expect(yield* expireMedia(at(10 * DAY_SECONDS), 10)).toEqual([])
        expect(yield* media.getMedia(mine, second.reference)).toBeDefined()
      })
    )

    test(
      "answers each due result once, earliest first, at most limit a call, of any account, and keeps the records",
      Effect.gen(function* () {
        const media = yield* MediaStore
        const mine = yield* fundedAccount(5 * USD)
        const theirs = yield* fundedAccount(5 * USD, "theirs")
        const myTask = yield* taskOf(mine)
        const theirTask = yield* taskOf(theirs)
        const third = resultRecord(mine, myTask, at(0), at(300))
        const first = resultRecord(theirs, theirTask, at(0), at(100))
        const second = resultRecord(mine, myTask, at(0), at(200))
        const later = resultRecord(theirs, theirTask, at(0), at(10_000))
        for (const record of [third, first, second, later]) yield* put(record)

        expect(yield* expire(at(99), 10)).toEqual([])
        expect(yield* expire(at(300), 0)).toEqual([])
        expect(yield* expire(at(300), 2)).toEqual([first.id, second.id])
        expect(yield* expire(at(300), 2)).toEqual([third.id])
        expect(yield* expire(at(300), 2)).toEqual([])
        const due = yield* MediaStore.use((store) => store.expireResults(at(10_000), 10))
        expect(due).toEqual([{ id: later.id, blobKey: later.blobKey }])
        expect(yield* expire(at(20_000), 10)).toEqual([])
        // The records stay: the tasks name them, and a download says they expired.
        for (const record of [first, second, third, later]) {
          expect((yield* media.getResult(record.accountId, record.id))?.expiresAt).toEqual(record.expiresAt)
        }
      })
    )
  })
