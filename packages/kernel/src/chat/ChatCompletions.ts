/**
 * The ChatCompletions service: one chat completion from request to settlement, in no wire format:
 * it takes a decoded ChatRequest, finds the model's price and upstream, estimates the prompt
 * (ChatTokens), fixes the completion cap, reserves through ChatBilling, then calls the upstream with
 * the same cap, answering its message or a stream of ChatEvents with usage and charge. Every opened
 * request is settled exactly once; what each outcome is charged: docs/decisions.md, Chat.
 */
import { Array as Arr, Cause, Clock, Context, Deferred, Effect, Exit, Layer, Pull, Scope, Stream } from "effect"
import type { Caller } from "../accounts/Accounts.ts"
import { ChatBilling, MAX_REQUEST_MS } from "./ChatBilling.ts"
import type { OpenError } from "./ChatBilling.ts"
import * as ChatPrices from "./ChatPrices.ts"
import { ChatProviderError, ChatProviders } from "./ChatProvider.ts"
import type { ChatCall, ChatProviderV1, ChatStreamPart, Json, JsonObject, ServedBy } from "./ChatProvider.ts"
import type { ChatOutcome, ChatRequestRecord } from "./ChatStore.ts"
import * as ChatTokens from "./ChatTokens.ts"
import * as PullDeadline from "./PullDeadline.ts"
import type { TokenUsage } from "./TokenUsage.ts"
import * as Errors from "../domain/Errors.ts"
import type { Micros } from "../domain/Money.ts"
import { ZERO } from "../domain/Money.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"

/** The completion cap when the caller gives none (less when the context leaves less room). */
export const DEFAULT_MAX_TOKENS = 4096

export const CLIENT_DISCONNECTED = "CLIENT_DISCONNECTED"

/** A chat request as the kernel runs it, decoded from the caller's wire format. */
export interface ChatRequest {
  readonly model: string
  /** The conversation in the common chat format, forwarded as sent. */
  readonly messages: ReadonlyArray<JsonObject>
  readonly stream: boolean
  /** The caller's completion cap; undefined when it gave none (the default applies). */
  readonly maxTokens: number | undefined
  /** The upstream call's body (ChatCall.body): `messages` and the options the caller gave. */
  readonly forward: JsonObject
}

export type CreateError = Errors.InvalidRequest | OpenError | Errors.UpstreamRateLimited | Errors.UpstreamError

/** An upstream failure as the caller sees it (toApiError). */
export type UpstreamFailure = Errors.UpstreamRateLimited | Errors.UpstreamError | Errors.InvalidRequest

/**
 * What a stream yields: the upstream's deltas (text, tool-call fragments...) as it gave them,
 * then Finished; or, when it cannot finish, Failed with what was charged for the part delivered
 * (StoreUnavailable: the end could not be recorded, nothing is charged).
 */
export type ChatEvent =
  | Extract<ChatStreamPart, { readonly _tag: "Delta" }>
  | { readonly _tag: "Finished"; readonly usage: TokenUsage; readonly chargedMicros: Micros }
  | {
      readonly _tag: "Failed"
      readonly error: UpstreamFailure | StoreUnavailable
      readonly usage: TokenUsage | null
      readonly chargedMicros: Micros
    }

/** A request's answer; `request` is its record as opened (id, model, createdAt). */
export type Created =
  | {
      readonly _tag: "Completion"
      readonly request: ChatRequestRecord
      /** The assistant message as the upstream gave it. */
      readonly message: JsonObject
      readonly finishReason: string | null
      readonly logprobs: Json | undefined
      readonly usage: TokenUsage
      readonly chargedMicros: Micros
    }
  | { readonly _tag: "Stream"; readonly request: ChatRequestRecord; readonly events: Stream.Stream<ChatEvent> }

/** A callable model: listed, enabled, priced and with a configured upstream. */
export interface CallableModel {
  readonly id: string
  readonly price: ChatPrices.ChatModelPrice
}

export class ChatCompletions extends Context.Service<
  ChatCompletions,
  {
    /** The callable models, in the price list's order. */
    readonly models: Effect.Effect<ReadonlyArray<CallableModel>>
    /**
     * Runs one request. A stream's upstream connection belongs to the Scope, which must stay
     * open while the stream is consumed (a server's request scope does).
     */
    readonly create: (caller: Caller, request: ChatRequest) => Effect.Effect<Created, CreateError, Scope.Scope>
  }
>()("@taskmeter/kernel/ChatCompletions") {}

/** The error a caller sees for an upstream failure, and the code recorded for it. */
export const toApiError = (error: ChatProviderError): UpstreamFailure => {
  switch (error.reason) {
    case "RateLimited":
      return new Errors.UpstreamRateLimited({
        message: "The model provider is rate-limiting requests; nothing was charged. Retry with backoff.",
        ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds })
      })
    case "InvalidRequest":
      return new Errors.InvalidRequest({ message: `The model provider refused the request: ${error.message}` })
    default:
      return new Errors.UpstreamError({ message: `The model provider failed the request; nothing was charged. ${error.message}` })
  }
}

const isText = (u: unknown): u is string => typeof u === "string" && u.length > 0
const isObject = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

/** The members of a message or delta whose text is output. */
const TEXT_KEYS = ["content", "refusal", "reasoning_content", "reasoning"] as const

/** What has reached the caller so far, for counting when the upstream reports no usage. */
class Tally {
  text = ""
  readonly toolCalls: Array<{ name: string; arguments: string }> = []
  delivered = false
  finishReason: string | null = null
  usage: TokenUsage | undefined = undefined
  servedBy: ServedBy | undefined = undefined

  addContent(source: JsonObject): void {
    for (const key of TEXT_KEYS) {
      const value = source[key]
      if (isText(value)) {
        this.text += value
        this.delivered = true
      } else if (key === "content" && Array.isArray(value)) {
        for (const part of value) {
          if (isObject(part) && isText(part.text)) {
            this.text += part.text
            this.delivered = true
          }
        }
      }
    }
    const calls = source.tool_calls
    if (Array.isArray(calls)) {
      calls.forEach((call, position) => {
        if (!isObject(call)) return
        const index = typeof call.index === "number" ? call.index : position
        const fn = isObject(call.function) ? call.function : {}
        const slot = (this.toolCalls[index] ??= { name: "", arguments: "" })
        if (isText(fn.name)) slot.name += fn.name
        if (isText(fn.arguments)) slot.arguments += fn.arguments
        this.delivered = true
      })
    }
    const legacy = source.function_call
    if (isObject(legacy)) {
      this.toolCalls.push({
        name: isText(legacy.name) ? legacy.name : "",
        arguments: isText(legacy.arguments) ? legacy.arguments : ""
      })
      this.delivered = true
    }
  }

  counted(tokenizer: ChatPrices.Tokenizer, promptTokens: number): TokenUsage {
    return {
      promptTokens,
      completionTokens: ChatTokens.countCompletion(tokenizer, {
        text: this.text,
        toolCalls: this.toolCalls.filter((call) => call !== undefined)
      })
    }
  }
}

/** What `Effect.uninterruptibleMask` hands its body: runs an effect interruptible again. */
type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

interface Prepared {
  readonly provider: ChatProviderV1
  readonly tokenizer: ChatPrices.Tokenizer
  readonly promptTokens: number
  readonly call: ChatCall
  readonly stream: boolean
}

export const make = Effect.gen(function* () {
  const prices = yield* ChatPrices.ChatPrices
  const providers = yield* ChatProviders
  const billing = yield* ChatBilling

  /** The provider the price list names for the model, if configured and serving it. */
  const servedBy = (name: string, model: string) => {
    const provider = providers.get(name)
    return provider !== undefined && (provider.serves?.(model) ?? true) ? provider : undefined
  }

  const prepare = Effect.fnUntraced(function* (request: ChatRequest) {
    const entry = yield* prices.lookup(request.model)
    const provider = entry === undefined ? undefined : servedBy(entry.provider, request.model)
    if (entry === undefined || provider === undefined) {
      return yield* new Errors.ModelNotFound({
        message: `No chat model is called ${request.model}; use the id of a listed chat model.`,
        model: request.model
      })
    }
    if (!ChatPrices.isPriced(entry)) {
      return yield* new Errors.ModelPriceUnavailable({
        message: `No price is configured for ${request.model}.`,
        model: request.model
      })
    }
    const tokenizer = entry.tokenizer ?? ChatTokens.tokenizerFor(request.model)
    const forward = request.forward
    const promptTokens = ChatTokens.estimatePrompt(tokenizer, request.messages, [
      forward.tools,
      forward.functions,
      forward.tool_choice,
      forward.function_call,
      forward.response_format
    ])
    if (promptTokens >= entry.contextLength) {
      return yield* new Errors.InvalidRequest({
        message:
          `messages: about ${promptTokens} tokens, more than ${request.model} can read ` +
          `(a context of ${entry.contextLength} tokens).`
      })
    }
    if (request.maxTokens !== undefined && request.maxTokens > entry.contextLength) {
      return yield* new Errors.InvalidRequest({
        message: `max_tokens: at most ${entry.contextLength} for ${request.model}.`
      })
    }
    const maxTokens = request.maxTokens ?? Math.min(DEFAULT_MAX_TOKENS, entry.contextLength - promptTokens)
    const prepared: Prepared = {
      provider,
      tokenizer,
      promptTokens,
      call: { model: request.model, body: forward, maxTokens },
      stream: request.stream
    }
    return prepared
  })

  /** Settles at most once, whichever of the stream's end, its failure or its Scope's close comes first. */
  const settler = (record: ChatRequestRecord) =>
    Effect.map(Deferred.make<ChatRequestRecord, StoreUnavailable>(), (done) => {
      let started = false
      return (outcome: {
        readonly status: ChatOutcome
        readonly usage: TokenUsage | null
        readonly finishReason: string | null
        readonly errorCode: string | null
        readonly servedBy?: ServedBy | undefined
      }): Effect.Effect<ChatRequestRecord, StoreUnavailable> =>
        Effect.suspend(() => {
          if (started) return Deferred.await(done)
          started = true
          return Effect.uninterruptible(Deferred.into(billing.settle(record.id, outcome), done)).pipe(
            Effect.andThen(Deferred.await(done))
          )
        })
    })

  const completeMasked = Effect.fnUntraced(function* (restore: Restore, prepared: Prepared, record: ChatRequestRecord) {
    const exit = yield* Effect.exit(
      restore(
        prepared.provider.complete(prepared.call).pipe(
          Effect.timeoutOrElse({
            duration: MAX_REQUEST_MS,
            orElse: () => Effect.fail(new ChatProviderError({ reason: "Timeout", message: "The model provider took too long." }))
          })
        )
      )
    )
    if (Exit.isFailure(exit)) {
      const error = Cause.findErrorOption(exit.cause)
      if (error._tag === "None") {
        yield* billing.settle(record.id, {
          status: "failed",
          usage: null,
          finishReason: null,
          errorCode: CLIENT_DISCONNECTED
        })
        return yield* Effect.failCause(exit.cause as Cause.Cause<never>)
      }
      const apiError = toApiError(error.value)
      yield* billing.settle(record.id, { status: "failed", usage: null, finishReason: null, errorCode: apiError.code })
      return yield* apiError
    }
    const reply = exit.value
    const tally = new Tally()
    tally.addContent(reply.message)
    const usage = reply.usage ?? tally.counted(prepared.tokenizer, prepared.promptTokens)
    const settled = yield* billing.settle(record.id, {
      status: "succeeded",
      usage,
      finishReason: reply.finishReason,
      errorCode: null,
      servedBy: reply.servedBy
    })
    const completion: Created = {
      _tag: "Completion",
      request: record,
      message: reply.message,
      finishReason: reply.finishReason,
      logprobs: reply.logprobs,
      usage,
      chargedMicros: settled.chargedMicros ?? ZERO
    }
    return completion
  })

  const complete = (prepared: Prepared, record: ChatRequestRecord) =>
    Effect.uninterruptibleMask((restore) => completeMasked(restore, prepared, record))

  const streamMasked = Effect.fnUntraced(function* (restore: Restore, prepared: Prepared, record: ChatRequestRecord) {
    const parent = yield* Effect.scope
    const upstreamScope = yield* Scope.fork(parent)
    const settle = yield* settler(record)
    const tally = new Tally()
    const settleEnded = (errorCode: string) =>
      tally.delivered
        ? settle({
            status: "partial",
            usage: tally.usage ?? tally.counted(prepared.tokenizer, prepared.promptTokens),
            finishReason: tally.finishReason,
            errorCode,
            servedBy: tally.servedBy
          })
        : settle({ status: "failed", usage: null, finishReason: null, errorCode })
    // Whatever becomes of the stream (even if it is never run), the request is settled when the Scope closes.
    yield* Scope.addFinalizerExit(parent, () => Effect.ignore(settleEnded(CLIENT_DISCONNECTED)))

    const opened = yield* Effect.exit(
      restore(
        Scope.provide(prepared.provider.stream(prepared.call), upstreamScope).pipe(
          Effect.timeoutOrElse({
            duration: MAX_REQUEST_MS,
            orElse: () => Effect.fail(new ChatProviderError({ reason: "Timeout", message: "The model provider took too long." }))
          })
        )
      )
    )
    if (Exit.isFailure(opened)) {
      yield* Scope.close(upstreamScope, Exit.void)
      const error = Cause.findErrorOption(opened.cause)
      if (error._tag === "None") {
        yield* settleEnded(CLIENT_DISCONNECTED)
        return yield* Effect.failCause(opened.cause as Cause.Cause<never>)
      }
      const apiError = toApiError(error.value)
      yield* settle({ status: "failed", usage: null, finishReason: null, errorCode: apiError.code })
      return yield* apiError
    }

    const finished = Effect.suspend(() => {
      const usage = tally.usage ?? tally.counted(prepared.tokenizer, prepared.promptTokens)
      return Effect.map(
        settle({ status: "succeeded", usage, finishReason: tally.finishReason, errorCode: null, servedBy: tally.servedBy }),
        (settled): ChatEvent => ({
          _tag: "Finished",
          usage: settled.usage ?? usage,
          chargedMicros: settled.chargedMicros ?? ZERO
        })
      )
    })

    const broken = (error: ChatProviderError) => {
      const apiError = toApiError(error)
      return Effect.map(
        settleEnded(apiError.code),
        (settled): ChatEvent => ({
          _tag: "Failed",
          error: apiError,
          usage: settled.usage,
          chargedMicros: settled.chargedMicros ?? ZERO
        })
      )
    }

    // The request stays open until the sweep releases it, charging nothing.
    const storeDown = (error: StoreUnavailable): ChatEvent => ({ _tag: "Failed", error, usage: null, chargedMicros: ZERO })

    const deadlineMs = record.createdAt.getTime() + MAX_REQUEST_MS
    const parts = PullDeadline.eachPullWithin(
      opened.value,
      Effect.map(Clock.currentTimeMillis, (nowMs) => deadlineMs - nowMs),
      () => new ChatProviderError({ reason: "Timeout", message: "The response took too long." })
    )
    // One stage for the deltas, the tally and the last event (each stage costs every pull of every stream).
    const events: Stream.Stream<ChatEvent> = Stream.transformPull(parts, (pull, scope) =>
      Effect.map(
        // At the stream's end, however it ends (not Stream.onExit, which builds a generator per call).
        Scope.addFinalizerExit(scope, (exit) =>
          Effect.andThen(
            Exit.hasInterrupts(exit) ? Effect.ignore(settleEnded(CLIENT_DISCONNECTED)) : Effect.void,
            Scope.close(upstreamScope, Exit.void)
          )
        ),
        () => {
          let over = false
          const last = (event: Effect.Effect<ChatEvent, StoreUnavailable>) => {
            over = true
            return Effect.map(
              Effect.catchTag(event, "StoreUnavailable", (error) => Effect.succeed(storeDown(error))),
              Arr.of
            )
          }
          const next: Pull.Pull<Arr.NonEmptyReadonlyArray<ChatEvent>, never, void> = Effect.suspend(() => {
            if (over) return Cause.done()
            return Pull.matchEffect(pull, {
              onSuccess: (chunk) => {
                const deltas: Array<ChatEvent> = []
                for (const part of chunk) {
                  if (part._tag === "Usage") tally.usage = part.usage
                  else if (part._tag === "Served") tally.servedBy = part.servedBy
                  else {
                    tally.addContent(part.delta)
                    if (part.finishReason !== null) tally.finishReason = part.finishReason
                    deltas.push(part)
                  }
                }
                return Arr.isArrayNonEmpty(deltas) ? Effect.succeed(deltas) : next
              },
              onDone: () => last(finished),
              onFailure: (cause) => {
                const error = Cause.findErrorOption(cause)
                return error._tag === "Some" ? last(broken(error.value)) : Effect.failCause(cause as Cause.Cause<never>)
              }
            })
          })
          return next
        }
      )
    )
    return events
  })

  const stream = (prepared: Prepared, record: ChatRequestRecord) =>
    Effect.uninterruptibleMask((restore) => streamMasked(restore, prepared, record))

  const create = Effect.fnUntraced(function* (caller: Caller, request: ChatRequest) {
    const prepared = yield* prepare(request)
    const record = yield* billing.open(caller, {
      model: prepared.call.model,
      promptTokens: prepared.promptTokens,
      maxTokens: prepared.call.maxTokens
    })
    if (!prepared.stream) return yield* complete(prepared, record)
    const created: Created = { _tag: "Stream", request: record, events: yield* stream(prepared, record) }
    return created
  })

  return ChatCompletions.of({
    models: Effect.map(prices.current, (list) =>
      Object.entries(list.models).flatMap(([id, price]) =>
        ChatPrices.isPriced(price) && servedBy(price.provider, id) !== undefined ? [{ id, price }] : []
      )
    ),
    create
  })
})

export const layer: Layer.Layer<ChatCompletions, never, ChatPrices.ChatPrices | ChatProviders | ChatBilling> = Layer.effect(
  ChatCompletions,
  make
)
