/**
 * Strings a store cannot hold (U+0000, unpaired surrogates) are refused at the door with a 400
 * naming where they are, nothing stored; ids and cursors that are no ids are 404s; validation
 * messages are bounded. Over every store, PostgreSQL included, where such a string reaching the
 * database would have been refused there (once a 503 for the whole batch).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Chat from "./chat/ChatTestServer.ts"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

/** Bodies written as JSON text, escapes and all, as a client would send them. */
const NUL_PROMPT = `{"model":"${T.MODEL}","input":{"prompt":"a\\u0000b"}}`
const SURROGATE_PROMPT = `{"model":"${T.MODEL}","input":{"prompt":"\\ud800 alone"}}`

const nothingStored = (who: T.Customer) =>
  Effect.gen(function* () {
    const usage = yield* T.usage(who)
    expect(usage.body).toMatchObject({ reservedMicros: 0, balanceMicros: 10_000_000 })
    expect(usage.body.entries.map((entry: { kind: string }) => entry.kind)).toEqual(["grant"])
    const jobs = yield* T.call("/api/v1/jobs", { headers: T.bearer(who.secret) })
    expect(jobs.body).toEqual({ data: [], nextCursor: null })
  })

for (const store of stores) {
  layer(T.layer(store), { excludeTestServices: true })(`unstorable strings over ${store.name}`, (it) => {
    describe("POST /api/v1/jobs", () => {
      it.effect("a NUL or a lone surrogate in the input is 400 INVALID_MODEL_INPUT naming the field; nothing stored", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          for (const [body, problem] of [
            [NUL_PROMPT, "contains U+0000 (NUL)"],
            [SURROGATE_PROMPT, "contains an unpaired surrogate"]
          ]) {
            const reply = yield* T.submit(who, body)
            expect(reply.status).toBe(400)
            expect(reply.body.code).toBe("INVALID_MODEL_INPUT")
            expect(reply.body.error).toContain(`input.prompt: ${problem}`)
          }
          const key = yield* T.submit(who, { model: T.MODEL, input: { ...T.INPUT, ["x\u0000"]: 1 } })
          expect(key.status).toBe(400)
          expect(key.body.error).toContain('input["x\\u0000"]: its name contains U+0000 (NUL)')
          yield* nothingStored(who)
        })
      )

      it.effect("a NUL in the model slug is MODEL_NOT_FOUND", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const reply = yield* T.submit(who, { model: `${T.MODEL}\u0000`, input: T.INPUT })
          expect(reply.status).toBe(404)
          expect(reply.body.code).toBe("MODEL_NOT_FOUND")
          yield* nothingStored(who)
        })
      )

      it.effect("14 poisoned and 14 valid submissions of two accounts at once: 14 x 400, 14 x 202", () =>
        Effect.gen(function* () {
          const accounts = yield* Effect.all([T.customer(), T.customer()])
          const sends = Array.from({ length: 28 }, (_, i) => {
            const who = accounts[i % 2]!
            const poisoned = Math.floor(i / 2) % 2 === 1
            return Effect.map(
              T.submit(who, poisoned ? (i % 4 === 3 ? NUL_PROMPT : SURROGATE_PROMPT) : { model: T.MODEL, input: T.INPUT }),
              (reply) => ({ poisoned, status: reply.status, code: reply.body.code as string | undefined })
            )
          })
          const replies = yield* Effect.all(sends, { concurrency: "unbounded" })
          expect(replies.filter((r) => r.poisoned).map((r) => [r.status, r.code])).toEqual(
            Array(14).fill([400, "INVALID_MODEL_INPUT"])
          )
          expect(replies.filter((r) => !r.poisoned).map((r) => r.status)).toEqual(Array(14).fill(202))
          for (const who of accounts) {
            const usage = yield* T.usage(who)
            expect(usage.body).toMatchObject({ balanceMicros: 10_000_000, reservedMicros: 7 * T.MODEL_PRICE })
            expect(usage.body.entries.filter((entry: { kind: string }) => entry.kind === "reserve")).toHaveLength(7)
          }
        })
      )

      it.effect("20,000 unknown fields: a short answer listing 20 and how many more", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const input: Record<string, unknown> = { ...T.INPUT }
          for (let i = 0; i < 20_000; i++) input[`k${i}`] = 0
          const reply = yield* T.submit(who, { model: T.MODEL, input })
          expect(reply.status).toBe(400)
          expect(reply.body.code).toBe("INVALID_MODEL_INPUT")
          expect(reply.body.error).toContain("input.k0: is not a field")
          expect(reply.body.error).toMatch(/; and 19980 more$/)
          expect(reply.text.length).toBeLessThan(5_000)
          const envelope: Record<string, unknown> = { model: T.MODEL, input: T.INPUT }
          for (let i = 0; i < 20_000; i++) envelope[`k${i}`] = 0
          const outer = yield* T.submit(who, envelope)
          expect(outer.status).toBe(400)
          expect(outer.body.code).toBe("INVALID_REQUEST")
          expect(outer.body.error).toMatch(/; and 19980 more$/)
          expect(outer.text.length).toBeLessThan(5_000)
          yield* nothingStored(who)
        })
      )
    })

    describe("ids and cursors that are no ids", () => {
      it.effect("are 404 with the endpoint's code, never a 5xx", () =>
        Effect.gen(function* () {
          const who = yield* T.customer()
          const get = (path: string) => T.call(path, { headers: T.bearer(who.secret) })
          const cases: ReadonlyArray<readonly [string, number, string]> = [
            ["/api/v1/jobs/task_%00", 404, "JOB_NOT_FOUND"],
            ["/api/v1/results/%00", 404, "JOB_NOT_FOUND"],
            ["/api/v1/usage?before=%00", 404, "REQUEST_NOT_FOUND"],
            ["/api/v1/usage?before=entry_%00", 404, "REQUEST_NOT_FOUND"],
            ["/api/v1/usage?before=%ED%A0%80", 404, "REQUEST_NOT_FOUND"]
          ]
          for (const [path, status, code] of cases) {
            const reply = yield* get(path)
            expect([path, reply.status, reply.body?.code]).toEqual([path, status, code])
          }
          // A path that is not valid percent-encoded UTF-8 is a malformed URL, whatever the route:
          // 400 INVALID_REQUEST saying how to encode it, not the 404 of an id or a route.
          for (const path of [
            "/api/v1/jobs/%ED%A0%80",
            "/api/v1/jobs/%",
            "/api/v1/results/%E0%A4%A",
            "/api/v1/chat/requests/%ED%A0%80",
            "/api/v1/result-links/%?sig=x",
            "/no-such-route/%zz"
          ]) {
            const undecodable = yield* get(path)
            expect([path, undecodable.status, undecodable.body?.code]).toEqual([path, 400, "INVALID_REQUEST"])
            expect(undecodable.body.error).toContain("not valid percent-encoded UTF-8")
          }
        })
      )
    })
  })
}

layer(Chat.layer(), { excludeTestServices: true })("unstorable strings in chat requests", (it) => {
  it.effect("a NUL or a lone surrogate in a message or the model is 400 INVALID_REQUEST naming it; nothing reserved", () =>
    Effect.gen(function* () {
      const who = yield* Chat.customer(5_000_000)
      const bodies: ReadonlyArray<readonly [string, string]> = [
        [
          `{"model":"taskmeter-local","messages":[{"role":"user","content":"a\\u0000b"}]}`,
          "messages[0].content: contains U+0000"
        ],
        [
          `{"model":"taskmeter-local","messages":[{"role":"user","content":[{"type":"text","text":"\\udc00"}]}]}`,
          "messages[0].content[0].text: contains an unpaired surrogate"
        ],
        [`{"model":"taskmeter-local\\u0000","messages":[{"role":"user","content":"hi"}]}`, "model: contains U+0000"]
      ]
      for (const [body, problem] of bodies) {
        const reply = yield* Chat.call("/api/v1/chat/completions", who, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body
        })
        expect(reply.status).toBe(400)
        expect(reply.body.code).toBe("INVALID_REQUEST")
        expect(reply.body.error).toContain(problem)
      }
      const usage = yield* Chat.usage(who)
      expect(usage).toMatchObject({ reservedMicros: 0, balanceMicros: 5_000_000 })
      expect(usage.entries.map((entry: { kind: string }) => entry.kind)).toEqual(["grant"])
      const history = yield* Chat.call("/api/v1/chat/requests", who)
      expect(history.body).toEqual({ requests: [], nextCursor: null })
      for (const path of ["/api/v1/chat/requests?before=%00", "/api/v1/chat/requests/%00"]) {
        const reply = yield* Chat.call(path, who)
        expect([path, reply.status, reply.body.code]).toEqual([path, 404, "REQUEST_NOT_FOUND"])
      }
    })
  )
})
