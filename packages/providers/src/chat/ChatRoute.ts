/**
 * One chat provider over named upstreams in order: a call goes to the first upstream that serves
 * the model and falls back to the next on 429, 5xx, a connection failure or a timeout (RateLimited,
 * Unavailable, Timeout) met before the first part of the reply; a refusal of the request itself
 * (InvalidRequest) and anything after the first streamed part are final. An upstream at its own
 * limits (requests open at once, requests per minute, counted in this process) is passed over as
 * if it had answered 429. The reply names the upstream that gave it, with its cost per token
 * (`servedBy`, a `Served` part first in a stream). Policy: docs/decisions.md, Chat.
 */
import { Array as Arr, Cause, Channel, Clock, Effect, Exit, Pull, Scope, Stream } from "effect"
import { ChatProvider } from "@taskmeter/kernel"

/** An upstream in a route and the models it serves (undefined: any model). */
export interface Member {
  readonly provider: ChatProvider.ChatProviderV1
  readonly models: ReadonlySet<string> | undefined
  /** Requests this process keeps open at once on it; undefined: no limit. */
  readonly maxConcurrent?: number | undefined
  /** Requests this process sends it per minute (a fixed window); undefined: no limit. */
  readonly requestsPerMinute?: number | undefined
  /** What it costs per million tokens; recorded with each request it serves. */
  readonly costPromptMicrosPerMillion?: number | undefined
  readonly costCompletionMicrosPerMillion?: number | undefined
}

const servedBy = (member: Member): ChatProvider.ServedBy => ({
  upstream: member.provider.provider,
  costPromptMicrosPerMillion: member.costPromptMicrosPerMillion,
  costCompletionMicrosPerMillion: member.costCompletionMicrosPerMillion
})

/** Whether the next upstream may take the call after this failure. */
export const fallsBack = (error: ChatProvider.ChatProviderError): boolean => error.reason !== "InvalidRequest"

/** The route named `provider` (the price list's `provider`) over `members`, tried in this order. */
export const make = (provider: string, members: ReadonlyArray<Member>): ChatProvider.ChatProviderV1 => {
  const serving = (model: string) => members.filter((member) => member.models === undefined || member.models.has(model))
  const open = new Map<Member, number>()
  const windows = new Map<Member, { startMs: number; count: number }>()

  const atLimit = (member: Member, message: string, retryAfterSeconds?: number) =>
    Effect.fail(
      new ChatProvider.ChatProviderError({
        reason: "RateLimited",
        message: `${member.provider.provider} ${message}`,
        ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds })
      })
    )

  /** Counts a request on `member` within its limits, or refuses it as RateLimited; `release` ends it. */
  const admit = (member: Member) =>
    Effect.flatMap(Clock.currentTimeMillis, (nowMs) => {
      const inFlight = open.get(member) ?? 0
      if (member.maxConcurrent !== undefined && inFlight >= member.maxConcurrent) {
        return atLimit(member, `has its ${member.maxConcurrent} requests open`)
      }
      if (member.requestsPerMinute !== undefined) {
        const current = windows.get(member)
        const window = current === undefined || nowMs >= current.startMs + 60_000 ? { startMs: nowMs, count: 0 } : current
        if (window.count >= member.requestsPerMinute) {
          return atLimit(
            member,
            `had its ${member.requestsPerMinute} requests this minute`,
            Math.ceil((window.startMs + 60_000 - nowMs) / 1000)
          )
        }
        windows.set(member, { ...window, count: window.count + 1 })
      }
      open.set(member, inFlight + 1)
      return Effect.void
    })
  const release = (member: Member) => Effect.sync(() => open.set(member, (open.get(member) ?? 1) - 1))

  /** Runs `attempt` on each serving upstream in turn until one succeeds or fails for good. */
  const firstOf = <A, R>(
    model: string,
    attempt: (member: Member) => Effect.Effect<A, ChatProvider.ChatProviderError, R>
  ): Effect.Effect<A, ChatProvider.ChatProviderError, R> => {
    const [first, ...rest] = serving(model)
    if (first === undefined) {
      return Effect.fail(
        new ChatProvider.ChatProviderError({ reason: "Unavailable", message: `no configured upstream serves ${model}` })
      )
    }
    const limited = (member: Member) => Effect.andThen(admit(member), attempt(member))
    return rest.reduce((chain, next) => Effect.catchIf(chain, fallsBack, () => limited(next)), limited(first))
  }

  /** The stream of `member`, its first chunk pulled (so that a failure before any part falls back), Served first. */
  const opened = Effect.fnUntraced(function* (member: Member, call: ChatProvider.ChatCall, scope: Scope.Scope) {
    yield* Scope.addFinalizer(scope, release(member))
    // A pull without Stream.toPull's per-pull provideContext (a copy of the whole service map
    // each time); it runs in the caller's fiber, which has the same services.
    const pull = yield* Channel.toPullScoped((yield* member.provider.stream(call)).channel, scope)
    // Its first chunk is pulled here, so that a failure before any part falls back; it goes on
    // as it came, with Served before it.
    let ended = false
    const first = yield* Pull.catchDone(pull, () => {
      ended = true
      return Effect.succeed([])
    })
    let pending: Arr.NonEmptyReadonlyArray<ChatProvider.ChatStreamPart> | undefined = [
      { _tag: "Served", servedBy: servedBy(member) },
      ...first
    ]
    return Stream.fromPull(
      Effect.succeed(
        Effect.suspend(() => {
          const chunk = pending
          pending = undefined
          if (chunk !== undefined) return Effect.succeed(chunk)
          return ended ? Cause.done() : pull
        })
      )
    )
  })

  return {
    specificationVersion: "v1",
    provider,
    serves: (model) => serving(model).length > 0,
    complete: (call) =>
      firstOf(call.model, (member) =>
        member.provider.complete(call).pipe(
          Effect.map((reply) => ({ ...reply, servedBy: servedBy(member) })),
          Effect.ensuring(release(member))
        )
      ),
    stream: (call) =>
      Effect.flatMap(Effect.scope, (outer) =>
        firstOf(call.model, (member) =>
          // Each attempt in a scope of its own, closed at once when it fails, so a refused upstream's connection is not held;
          // the request stays open on the upstream until the scope closes.
          Effect.flatMap(Scope.fork(outer, "sequential"), (scope) =>
            opened(member, call, scope).pipe(
              Scope.provide(scope),
              Effect.onExit((exit) => (Exit.isFailure(exit) ? Scope.close(scope, exit) : Effect.void))
            )
          )
        )
      )
  }
}
