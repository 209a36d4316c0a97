import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Ids from "../../src/domain/Ids.ts"
import * as MediaReference from "../../src/media/MediaReference.ts"
import { timeOf, uuid7 } from "../../src/domain/Uuid7.ts"

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("Uuid7", () => {
  it("is a version 7, variant 10 UUID carrying its millisecond", () => {
    const at = Date.UTC(2026, 10, 27, 22, 30, 0, 123)
    const uuid = uuid7(at)
    expect(uuid).toMatch(V7)
    expect(timeOf(uuid)).toBe(at)
    expect(uuid.slice(0, 13)).toBe("01a21f21-36bb")
  })

  it("keeps 74 random bits: ids of one millisecond differ", () => {
    const at = Date.now()
    const ids = new Set(Array.from({ length: 10_000 }, () => uuid7(at)))
    expect(ids.size).toBe(10_000)
  })

  it("sorts later ids after earlier ones, as text", async () => {
    const made: Array<string> = []
    for (let i = 0; i < 5; i++) {
      made.push(uuid7())
      await sleep(2)
    }
    expect([...made].sort()).toEqual(made)
  })
})

describe("Ids", () => {
  it("makes task, ledger entry, result, chat request and media ids as v7 behind their prefixes", () => {
    for (const [prefix, id] of [
      ["task_", Ids.makeTaskId()],
      ["entry_", Ids.makeLedgerEntryId()],
      ["", Ids.makeResultId()],
      ["chatreq_", Ids.makeChatRequestId()],
      ["media:", MediaReference.make()]
    ] as const) {
      expect(id.startsWith(prefix)).toBe(true)
      expect(id.slice(prefix.length)).toMatch(V7)
    }
  })

  it("task ids made later sort after earlier ones", async () => {
    const first = Ids.makeTaskId()
    await sleep(2)
    const second = Ids.makeTaskId()
    expect(first < second).toBe(true)
  })

  it("still accepts the v4 ids stored before, and refuses other versions", () => {
    expect(Ids.isTaskId("task_3f1c2a4e-9b7d-4c21-8e0f-1a2b3c4d5e6f")).toBe(true)
    expect(Ids.isResultId("3f1c2a4e-9b7d-4c21-8e0f-1a2b3c4d5e6f")).toBe(true)
    expect(Ids.isTaskId("task_3f1c2a4e-9b7d-1c21-8e0f-1a2b3c4d5e6f")).toBe(false)
    expect(Schema.is(Ids.TaskId)(`task_${uuid7()}`)).toBe(true)
  })
})
