import { describe, expect, it } from "@effect/vitest"
import { TestClock } from "effect/testing"
import { Deferred, Effect, Exit, Fiber, Layer, Queue, Scope, Stream } from "effect"
import { MemoryStore } from "@taskmeter/storage-memory"
import type { Caller } from "../../src/accounts/Accounts.ts"
import * as ChatBilling from "../../src/chat/ChatBilling.ts"
import * as ChatCompletions from "../../src/chat/ChatCompletions.ts"
import * as ChatPrices from "../../src/chat/ChatPrices.ts"
import * as ChatProvider from "../../src/chat/ChatProvider.ts"
import * as ChatStore from "../../src/chat/ChatStore.ts"
import type { ChatCall, ChatProviderV1, ChatReply, ChatStreamPart, JsonObject } from "../../src/chat/ChatProvider.ts"
import * as ChatTokens from "../../src/chat/ChatTokens.ts"
import * as Errors from "../../src/domain/Errors.ts"
import type { AccountId } from "../../src/domain/Ids.ts"
import * as Scopes from "../../src/accounts/Scope.ts"
import { allEntries, expectBalances, expectBooksBalance, fundedAccount, USD } from "../../src/testing/Fixtures.ts"

const MODEL = "test-chat"
const TIERS = [
  { upToPromptTokens: 1000, promptMicrosPerMillion: 1_000_000, completionMicrosPerMillion: 2_000_000 },
  { upToPromptTokens: null, promptMicrosPerMillion: 2_000_000, completionMicrosPerMillion: 4_000_000 }
]
const prices = {
  models: {
    [MODEL]: { enabled: true, provider: "fake", contextLength: 8000, tiers: TIERS },
    "test-disabled": { enabled: false, provider: "fake", contextLength: 8000, tiers: TIERS },
    "test-unpriced": { enabled: true, provider: "fake", contextLength: 8000 },
    "test-unrouted": { enabled: true, provider: "nowhere", contextLength: 8000, tiers: TIERS }
  }
}

const MESSAGES = [{ role: "user", content: "What is the capital of Norway?" }]
const PROMPT_ESTIMATE = ChatTokens.estimatePrompt("o200k_base", MESSAGES)
const typed = ChatPrices.decode(prices).pipe((r) => (r._tag === "Success" ? r.success : undefined))!
const tiers = typed.models[MODEL]!.tiers!
const costOf = (promptTokens: number, completionTokens: number) => ChatPrices.cost(tiers, { promptTokens, completionTokens })

interface Fake {
  readonly provider: ChatProviderV1
  readonly calls: Array<ChatCall>
  /** How many stream connections were closed (aborted or finished). */
  closed: number
}

const fake = (script: {
  readonly complete?: (call: ChatCall) => Effect.Effect<ChatReply, ChatProvider.ChatProviderError>
  readonly stream?: (
    call: ChatCall
  ) => Effect.Effect<Stream.Stream<ChatStreamPart, ChatProvider.ChatProviderError>, ChatProvider.ChatProviderError>
}): Fake => {
  const state: Fake = {
    calls: [],
    closed: 0,
    provider: {
      specificationVersion: "v1",
      provider: "fake",
      complete: (call) => {
        state.calls.push(call)
        return script.complete === undefined ? Effect.die("no complete scripted") : script.complete(call)
      },
      stream: (call) => {
        state.calls.push(call)
        return Effect.andThen(
          Effect.addFinalizer(() => Effect.sync(() => state.closed++)),
          script.stream === undefined ? Effect.die("no stream scripted") : script.stream(call)
        )
      }
    }
  }
  return state
}

const layerFor = (upstream: Fake, priceList: unknown = prices) =>
  ChatCompletions.layer.pipe(
    Layer.provideMerge(ChatBilling.layer()),
    Layer.provideMerge(Layer.merge(ChatPrices.layer(priceList), ChatProvider.layer([upstream.provider]))),
    Layer.provideMerge(MemoryStore.layer)
  )

const callerOf = (accountId: AccountId): Caller => ({ accountId, apiKeyId: null, scopes: Scopes.all, keyUsageLimit: null })

/** A request for MODEL with MESSAGES, not streamed and with no cap, unless told otherwise. */
interface Ask {
  readonly model?: string
  readonly messages?: ReadonlyArray<JsonObject>
  readonly stream?: boolean
  readonly maxTokens?: number
  /** Forwarded options besides messages. */
  readonly options?: JsonObject
}

const create = (caller: Caller, ask: Ask = {}) => {
  const messages = ask.messages ?? MESSAGES
  return ChatCompletions.ChatCompletions.use((chat) =>
    chat.create(caller, {
      model: ask.model ?? MODEL,
      messages,
      stream: ask.stream ?? false,
      maxTokens: ask.maxTokens,
      forward: { messages, ...ask.options }
    })
  )
}

const onlyRequest = (caller: Caller) =>
  Effect.map(
    ChatBilling.ChatBilling.use((billing) => billing.list(caller, { limit: 100 })),
    (page) => {
      expect(page.requests).toHaveLength(1)
      return page.requests[0]!
    }
  )

/** The ledger movements of the account's chat requests, oldest first. */
const chatEntries = (accountId: AccountId) =>
  Effect.map(allEntries(accountId), (entries) =>
    entries
      .filter((entry) => entry.chatRequestId !== null)
      .map((entry) => [entry.kind, entry.amountMicros])
      .reverse()
  )

const reply = (content: string, usage?: { promptTokens: number; completionTokens: number }): ChatReply => ({
  message: { role: "assistant", content },
  finishReason: "stop",
  usage
})

const delta = (content: string, finishReason: string | null = null): ChatStreamPart => ({
  _tag: "Delta",
  delta: { content },
  finishReason
})

describe("ChatCompletions.create, not streamed", () => {
  it.effect("reserves before the call, sends the cap, charges the reported usage and releases the rest", () => {
    const upstream = fake({ complete: () => Effect.succeed(reply("Oslo.", { promptTokens: 14, completionTokens: 3 })) })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(USD)
      const caller = callerOf(accountId)
      const created = yield* create(caller, { maxTokens: 50, options: { temperature: 0 } })
      expect(upstream.calls).toEqual([{ model: MODEL, maxTokens: 50, body: { messages: MESSAGES, temperature: 0 } }])
      if (created._tag !== "Completion") return yield* Effect.die("expected a completion")
      const charge = costOf(14, 3)
      expect(created).toMatchObject({
        request: { model: MODEL },
        message: { role: "assistant", content: "Oslo." },
        finishReason: "stop",
        usage: { promptTokens: 14, completionTokens: 3 },
        chargedMicros: charge
      })
      const reserved = costOf(PROMPT_ESTIMATE, 50)
      expect(yield* chatEntries(accountId)).toEqual([
        ["reserve", reserved],
        ["charge", charge],
        ["release", reserved - charge]
      ])
      expect(yield* onlyRequest(caller)).toMatchObject({
        id: created.request.id,
        status: "succeeded",
        chargedMicros: charge,
        usage: { promptTokens: 14, completionTokens: 3 },
        finishReason: "stop",
        errorCode: null
      })
      yield* expectBalances(accountId, { balance: USD - charge, reserved: 0 })
      yield* expectBooksBalance
    }).pipe(Effect.scoped, Effect.provide(layerFor(upstream)))
  })

  it.effect("estimates by the model's family (its id's, or the tokenizer named); settles on the reported usage", () => {
    const upstream = fake({ complete: () => Effect.succeed(reply("Oslo.", { promptTokens: 14, completionTokens: 3 })) })
    return Effect.gen(function* () {
      for (const [model, family] of [
        ["claude-test", "anthropic"],
        ["test-named-llama", "llama"]
      ] as const) {
        const accountId = yield* fundedAccount(USD)
        yield* create(callerOf(accountId), { model, maxTokens: 50 })
        const estimate = ChatTokens.estimatePrompt(family, MESSAGES)
        expect(estimate).toBeGreaterThan(PROMPT_ESTIMATE)
        const reserved = costOf(estimate, 50)
        const charge = costOf(14, 3)
        expect(yield* chatEntries(accountId)).toEqual([
          ["reserve", reserved],
          ["charge", charge],
          ["release", reserved - charge]
        ])
      }
      yield* expectBooksBalance
    }).pipe(
      Effect.scoped,
      Effect.provide(
        layerFor(upstream, {
          models: {
            "claude-test": { enabled: true, provider: "fake", contextLength: 8000, tiers: TIERS },
            "test-named-llama": { enabled: true, provider: "fake", contextLength: 8000, tokenizer: "llama", tiers: TIERS }
          }
        })
      )
    )
  })

  it.effect("applies the default cap: 4096, or what the context leaves", () => {
    const upstream = fake({ complete: () => Effect.succeed(reply("ok", { promptTokens: 1, completionTokens: 1 })) })
    return Effect.gen(function* () {
      const caller = callerOf(yield* fundedAccount(USD))
      yield* create(caller, {})
      expect(upstream.calls[0]?.maxTokens).toBe(ChatCompletions.DEFAULT_MAX_TOKENS)
      const long = [{ role: "user", content: "word ".repeat(5000) }]
      yield* create(caller, { messages: long })
      expect(upstream.calls[1]?.maxTokens).toBe(8000 - ChatTokens.estimatePrompt("o200k_base", long))
    }).pipe(Effect.scoped, Effect.provide(layerFor(upstream)))
  })

  it.effect("charges counted tokens when the upstream reports no usage", () => {
    const upstream = fake({ complete: () => Effect.succeed(reply("The capital of Norway is Oslo.")) })
    return Effect.gen(function* () {
      const caller = callerOf(yield* fundedAccount(USD))
      const created = yield* create(caller, { maxTokens: 50 })
      const completion = ChatTokens.countText("o200k_base", "The capital of Norway is Oslo.")
      expect(created._tag === "Completion" && created.usage).toEqual({
        promptTokens: PROMPT_ESTIMATE,
        completionTokens: completion
      })
      expect((yield* onlyRequest(caller)).chargedMicros).toBe(costOf(PROMPT_ESTIMATE, completion))
    }).pipe(Effect.scoped, Effect.provide(layerFor(upstream)))
  })

  it.effect("never charges more than the reservation, whatever the upstream reports; the rest is the shortfall", () => {
    const upstream = fake({ complete: () => Effect.succeed(reply("x", { promptTokens: 5000, completionTokens: 5000 })) })
    return Effect.gen(function* () {
      const caller = callerOf(yield* fundedAccount(USD))
      yield* create(caller, { maxTokens: 10 })
      const record = yield* onlyRequest(caller)
      expect(record.chargedMicros).toBe(costOf(PROMPT_ESTIMATE, 10))
      expect(record.chargedMicros).toBe(record.reservedMicros)
      const margin = yield* ChatStore.ChatStore.use((store) => store.margin({ from: new Date(0), to: new Date(8.64e15) }))
      expect(margin.map((row) => row.shortfallMicros)).toEqual([costOf(5000, 5000) - record.reservedMicros])
      yield* expectBooksBalance
    }).pipe(Effect.scoped, Effect.provide(layerFor(upstream)))
  })

  it.effect("upstream failures charge nothing and map to the spec's codes", () => {
    const failures = [
      [
        new ChatProvider.ChatProviderError({ reason: "RateLimited", message: "slow down", retryAfterSeconds: 7 }),
        "UPSTREAM_RATE_LIMITED"
      ],
      [new ChatProvider.ChatProviderError({ reason: "Unavailable", message: "500" }), "UPSTREAM_ERROR"],
      [new ChatProvider.ChatProviderError({ reason: "Timeout", message: "slow" }), "UPSTREAM_ERROR"],
      [new ChatProvider.ChatProviderError({ reason: "InvalidRequest", message: "bad tool schema" }), "INVALID_REQUEST"]
    ] as const
    let next = 0
    const upstream = fake({ complete: () => Effect.fail(failures[next++]![0]) })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(USD)
      const caller = callerOf(accountId)
      for (const [, code] of failures) {
        const error = yield* Effect.flip(create(caller, { maxTokens: 10 }))
        expect(error).toMatchObject({ code })
        if (code === "UPSTREAM_RATE_LIMITED") expect(error).toMatchObject({ retryAfterSeconds: 7 })
      }
      const page = yield* ChatBilling.ChatBilling.use((billing) => billing.list(caller, { limit: 100 }))
      expect(page.requests.map((r) => [r.status, r.chargedMicros, r.errorCode])).toEqual([
        ["failed", 0, "INVALID_REQUEST"],
        ["failed", 0, "UPSTREAM_ERROR"],
        ["failed", 0, "UPSTREAM_ERROR"],
        ["failed", 0, "UPSTREAM_RATE_LIMITED"]
      ])
      yield* expectBalances(accountId, { balance: USD, reserved: 0 })
      expect((yield* chatEntries(accountId)).filter(([kind]) => kind === "charge")).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(layerFor(upstream)))
  })

  it.effect("refuses before any upstream call: unknown, unrouted, unpriced, too long, unaffordable", () => {
    const upstream = fake({ complete: () => Effect.succeed(reply("never")) })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(10)
      const caller = callerOf(accountId)
      const codeOf = (ask: Ask) => Effect.map(Effect.flip(create(caller, ask)), (e) => ("code" in e ? e.code : e._tag))
      expect(yield* codeOf({ model: "nope" })).toBe("MODEL_NOT_FOUND")
      expect(yield* codeOf({ model: "test-unrouted" })).toBe("MODEL_NOT_FOUND")
      expect(yield* codeOf({ model: "test-disabled" })).toBe("MODEL_PRICE_UNAVAILABLE")
      expect(yield* codeOf({ model: "test-unpriced" })).toBe("MODEL_PRICE_UNAVAILABLE")
      expect(yield* codeOf({ maxTokens: 8001 })).toBe("INVALID_REQUEST")
      expect(yield* codeOf({ messages: [{ role: "user", content: "word ".repeat(9000) }] })).toBe("INVALID_REQUEST")
      expect(yield* codeOf({ maxTokens: 1000 })).toBe("INSUFFICIENT_CREDITS")
      // The kernel's caller gets the model and both amounts as fields.
      expect(yield* Effect.flip(create(caller, { model: "nope" }))).toMatchObject({ model: "nope" })
      expect(yield* Effect.flip(create(caller, { model: "test-unpriced" }))).toMatchObject({ model: "test-unpriced" })
      const poor = yield* Effect.flip(create(caller, { maxTokens: 1000 }))
      const amounts = poor instanceof Errors.InsufficientCredits ? [poor.requiredMicros, poor.availableMicros] : []
      expect(amounts).toEqual([expect.any(Number), expect.any(Number)])
      expect(amounts[0]).toBeGreaterThan(amounts[1] ?? Infinity)
      expect(upstream.calls).toEqual([])
      expect(yield* chatEntries(accountId)).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(layerFor(upstream)))
  })

  it.live("a caller that goes away mid-call is not charged, and the upstream call is interrupted", () => {
    const started = Deferred.makeUnsafe<void>()
    let interrupted = false
    const upstream = fake({
      complete: () =>
        Deferred.succeed(started, undefined).pipe(
          Effect.andThen(Effect.never),
          Effect.onInterrupt(() => Effect.sync(() => (interrupted = true)))
        )
    })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(USD)
      const caller = callerOf(accountId)
      const fiber = yield* Effect.forkChild(Effect.scoped(create(caller, { maxTokens: 10 })))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      expect(interrupted).toBe(true)
      expect(yield* onlyRequest(caller)).toMatchObject({ status: "failed", chargedMicros: 0, errorCode: "CLIENT_DISCONNECTED" })
      yield* expectBalances(accountId, { balance: USD, reserved: 0 })
    }).pipe(Effect.scoped, Effect.provide(layerFor(upstream)))
  })
})

describe("ChatCompletions.create, streamed", () => {
  const events = (created: ChatCompletions.Created) =>
    created._tag === "Stream" ? Stream.runCollect(created.events) : Effect.die("expected a stream")

  it.effect("passes deltas through, then a usage chunk with the charge", () => {
    const upstream = fake({
      stream: () =>
        Effect.succeed(
          Stream.fromIterable<ChatStreamPart>([
            { _tag: "Delta", delta: { role: "assistant", content: "" }, finishReason: null },
            delta("Os"),
            delta("lo."),
            delta("", "stop"),
            { _tag: "Usage", usage: { promptTokens: 14, completionTokens: 3 } }
          ])
        )
    })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(USD)
      const caller = callerOf(accountId)
      const all = yield* Effect.flatMap(create(caller, { stream: true, maxTokens: 20 }), events)
      expect(all.map((event) => (event._tag === "Delta" ? event.delta : event._tag))).toEqual([
        { role: "assistant", content: "" },
        { content: "Os" },
        { content: "lo." },
        { content: "" },
        "Finished"
      ])
      const charge = costOf(14, 3)
      expect(all.at(-1)).toEqual({ _tag: "Finished", usage: { promptTokens: 14, completionTokens: 3 }, chargedMicros: charge })
      expect(yield* onlyRequest(caller)).toMatchObject({ status: "succeeded", chargedMicros: charge, finishReason: "stop" })
      expect(upstream.closed).toBe(1)
      yield* expectBalances(accountId, { balance: USD - charge, reserved: 0 })
    }).pipe(Effect.scoped, Effect.provide(layerFor(upstream)))
  })

  it.effect("counts the delivered text when the upstream stream reports no usage", () => {
    const upstream = fake({
      stream: () => Effect.succeed(Stream.fromIterable([delta("Oslo is"), delta(" the capital.", "stop")]))
    })
    return Effect.gen(function* () {
      const caller = callerOf(yield* fundedAccount(USD))
      const all = yield* Effect.flatMap(create(caller, { stream: true, maxTokens: 20 }), events)
      const completion = ChatTokens.countText("o200k_base", "Oslo is the capital.")
      expect(all.at(-1)).toMatchObject({
        _tag: "Finished",
        usage: { promptTokens: PROMPT_ESTIMATE, completionTokens: completion }
      })
      expect((yield* onlyRequest(caller)).chargedMicros).toBe(costOf(PROMPT_ESTIMATE, completion))
    }).pipe(Effect.scoped, Effect.provide(layerFor(upstream)))
  })

  it.effect("a stream the upstream breaks off is charged for what was delivered and ends with an error event", () => {
    const cut = new ChatProvider.ChatProviderError({ reason: "Unavailable", message: "connection reset" })
    const upstream = fake({
      stream: () => Effect.succeed(Stream.concat(Stream.fromIterable([delta("Oslo is")]), Stream.fail(cut)))
    })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(USD)
      const caller = callerOf(accountId)
      const all = yield* Effect.flatMap(create(caller, { stream: true, maxTokens: 20 }), events)
      const charge = costOf(PROMPT_ESTIMATE, ChatTokens.countText("o200k_base", "Oslo is"))
      expect(all.at(-1)).toMatchObject({ _tag: "Failed", error: { code: "UPSTREAM_ERROR" }, chargedMicros: charge })
      expect(yield* onlyRequest(caller)).toMatchObject({ status: "partial", chargedMicros: charge, errorCode: "UPSTREAM_ERROR" })
      yield* expectBalances(accountId, { balance: USD - charge, reserved: 0 })
    }).pipe(Effect.scoped, Effect.provide(layerFor(upstream)))
  })

  it.effect("a stream broken before any output charges nothing", () => {
    const upstream = fake({
      stream: () => Effect.succeed(Stream.fail(new ChatProvider.ChatProviderError({ reason: "Timeout", message: "idle" })))
    })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(USD)
      const caller = callerOf(accountId)
      const all = yield* Effect.flatMap(create(caller, { stream: true }), events)
      expect(all).toEqual([
        { _tag: "Failed", error: expect.objectContaining({ code: "UPSTREAM_ERROR" }), usage: null, chargedMicros: 0 }
      ])
      expect(yield* onlyRequest(caller)).toMatchObject({ status: "failed", chargedMicros: 0 })
      yield* expectBalances(accountId, { balance: USD, reserved: 0 })
    }).pipe(Effect.scoped, Effect.provide(layerFor(upstream)))
  })

  it.effect("an upstream that refuses the stream fails the request before any event", () => {
    const upstream = fake({
      stream: () =>
        Effect.fail(new ChatProvider.ChatProviderError({ reason: "RateLimited", message: "429", retryAfterSeconds: 3 }))
    })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(USD)
      const error = yield* Effect.flip(create(callerOf(accountId), { stream: true }))
      expect(error).toMatchObject({ code: "UPSTREAM_RATE_LIMITED", retryAfterSeconds: 3 })
      expect(upstream.closed).toBe(1)
      yield* expectBalances(accountId, { balance: USD, reserved: 0 })
    }).pipe(Effect.scoped, Effect.provide(layerFor(upstream)))
  })

  it.effect("a caller that disconnects mid-stream closes the upstream and pays for the delivered part", () =>
    Effect.gen(function* () {
      const parts = yield* Queue.unbounded<ChatStreamPart>()
      const upstream = fake({ stream: () => Effect.succeed(Stream.fromQueue(parts)) })
      return yield* Effect.gen(function* () {
        const accountId = yield* fundedAccount(USD)
        const caller = callerOf(accountId)
        const seen = yield* Queue.unbounded<ChatCompletions.ChatEvent>()
        const scope = yield* Scope.make()
        const created = yield* Scope.provide(create(caller, { stream: true, maxTokens: 100 }), scope)
        const consumer = yield* Effect.forkChild(
          created._tag === "Stream" ? Stream.runForEach(created.events, (event) => Queue.offer(seen, event)) : Effect.void
        )
        yield* Queue.offerAll(parts, [delta("The capital"), delta(" of Norway")])
        yield* Queue.take(seen)
        yield* Queue.take(seen)
        yield* Fiber.interrupt(consumer)
        yield* Scope.close(scope, Exit.void)
        const charge = costOf(PROMPT_ESTIMATE, ChatTokens.countText("o200k_base", "The capital of Norway"))
        expect(yield* onlyRequest(caller)).toMatchObject({
          status: "partial",
          chargedMicros: charge,
          errorCode: "CLIENT_DISCONNECTED"
        })
        expect(upstream.closed).toBe(1)
        yield* expectBalances(accountId, { balance: USD - charge, reserved: 0 })
      }).pipe(Effect.scoped, Effect.provide(layerFor(upstream)))
    })
  )

  it.effect("a stream that is never consumed is settled when its scope closes", () => {
    const upstream = fake({ stream: () => Effect.succeed(Stream.fromIterable([delta("hi", "stop")])) })
    return Effect.gen(function* () {
      const accountId = yield* fundedAccount(USD)
      const caller = callerOf(accountId)
      yield* Effect.scoped(create(caller, { stream: true }))
      expect(yield* onlyRequest(caller)).toMatchObject({ status: "failed", chargedMicros: 0, errorCode: "CLIENT_DISCONNECTED" })
      expect(upstream.closed).toBe(1)
      yield* expectBalances(accountId, { balance: USD, reserved: 0 })
    }).pipe(Effect.scoped, Effect.provide(layerFor(upstream)))
  })
})

describe("ChatCompletions.models", () => {
  it.effect("lists the models that are priced and have an upstream", () =>
    Effect.gen(function* () {
      const list = yield* ChatCompletions.ChatCompletions.use((chat) => chat.models)
      expect(list.map((model) => model.id)).toEqual([MODEL])
    }).pipe(Effect.provide(layerFor(fake({}))))
  )

  it.effect("leaves out, and refuses as unknown, a model its upstream says it does not serve", () => {
    const upstream = fake({})
    const picky = { ...upstream, provider: { ...upstream.provider, serves: (model: string) => model !== MODEL } }
    return Effect.gen(function* () {
      expect(yield* ChatCompletions.ChatCompletions.use((chat) => chat.models)).toEqual([])
      const error = yield* Effect.flip(create(callerOf(yield* fundedAccount(USD))))
      expect(error._tag).toBe("ModelNotFound")
      expect(upstream.calls).toEqual([])
    }).pipe(Effect.provide(layerFor(picky)))
  })
})

describe("ChatBilling.sweepAtStart", () => {
  it.effect("releases the requests a dead process left open, once they are stale", () =>
    Effect.gen(function* () {
      const accountId = yield* fundedAccount(USD)
      const caller = callerOf(accountId)
      const billing = yield* ChatBilling.ChatBilling
      const opened = yield* billing.open(caller, { model: MODEL, promptTokens: 10, maxTokens: 10 })
      expect(yield* ChatBilling.sweepAtStart()).toBe(0)
      yield* TestClock.adjust(ChatBilling.STALE_AFTER_MS + 1)
      expect(yield* ChatBilling.sweepAtStart()).toBe(1)
      expect(yield* billing.get(caller, opened.id)).toMatchObject({ status: "failed", chargedMicros: 0, errorCode: "ABANDONED" })
      yield* expectBalances(accountId, { balance: USD, reserved: 0 })
    }).pipe(Effect.provide(layerFor(fake({}))))
  )
})
