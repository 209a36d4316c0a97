import { Effect, Redacted } from "effect"
import { describe, expect, it } from "@effect/vitest"
import * as CallbackUrls from "../../src/tasks/CallbackUrls.ts"
import type { AccountId, TaskId } from "../../src/domain/Ids.ts"

const secret = Redacted.make("the callback test's signing secret, 32 chars or more")
const previous = Redacted.make("the signing secret before the rotation, 32+ chars")
const task = { id: "task_1" as TaskId, accountId: "acct_1" as AccountId }

const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1)

describe("CallbackUrls", () => {
  it("gives each task its URL under the base, and verifies only that task's token", () => {
    const urls = CallbackUrls.make({ baseUrl: "https://api.example.test/", secret })
    const url = urls.urlFor(task)!
    expect(url).toMatch(/^https:\/\/api\.example\.test\/callbacks\/v1\/acct_1\/task_1\/[A-Za-z0-9_-]{43}$/)
    const token = tokenOf(url)
    expect(urls.verify("acct_1", "task_1", token)).toBe(true)
    expect(urls.verify("acct_1", "task_2", token)).toBe(false)
    expect(urls.verify("acct_2", "task_1", token)).toBe(false)
    expect(urls.verify("acct_1", "task_1", `${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`)).toBe(false)
    expect(urls.verify("acct_1", "task_1", "")).toBe(false)
    expect(urls.verify("acct_1", "task_1", "not base64url at all!")).toBe(false)
    // Another secret signs other tokens.
    expect(tokenOf(CallbackUrls.make({ baseUrl: "https://api.example.test", secret: previous }).urlFor(task)!)).not.toBe(token)
  })

  it("keeps verifying tokens of the previous secret after a rotation, and signs with the new one", () => {
    const before = CallbackUrls.make({ baseUrl: "https://api.example.test", secret: previous })
    const after = CallbackUrls.make({ baseUrl: "https://api.example.test", secret, previousSecret: previous })
    expect(after.verify("acct_1", "task_1", tokenOf(before.urlFor(task)!))).toBe(true)
    expect(tokenOf(after.urlFor(task)!)).not.toBe(tokenOf(before.urlFor(task)!))
    expect(
      CallbackUrls.make({ baseUrl: "https://api.example.test", secret }).verify("acct_1", "task_1", tokenOf(before.urlFor(task)!))
    ).toBe(false)
  })

  it.effect("is off unless a layer turns it on: no URL, nothing verifies", () =>
    Effect.gen(function* () {
      const off = yield* CallbackUrls.CallbackUrls
      expect(off.urlFor(task)).toBeUndefined()
      expect(off.verify("acct_1", "task_1", "anything")).toBe(false)
      const on = yield* Effect.provide(
        Effect.gen(function* () {
          return yield* CallbackUrls.CallbackUrls
        }),
        CallbackUrls.layer({ baseUrl: "https://api.example.test", secret })
      )
      expect(on.urlFor(task)).toMatch(/^https:\/\/api\.example\.test\/callbacks\/v1\//)
    })
  )
})
