/**
 * One chat provider over named upstreams in order: a call goes to the first upstream that serves
 * the model and falls back to the next on 429, 5xx, a connection failure or a timeout (RateLimited,
 * Unavailable, Timeout) met before the first part of the reply; a refusal of the request itself
 * (InvalidRequest) and anything after the first streamed part are final. Policy: docs/decisions.md, Chat.
 */
import { Effect, Exit, Scope, Sink, Stream } from "effect"
import { ChatProvider } from "@taskmeter/kernel"

/** An upstream in a route and the models it serves (undefined: any model). */
export interface Member {
  readonly provider: ChatProvider.ChatProviderV1
  readonly models: ReadonlySet<string> | undefined
}

/** Whether the next upstream may take the call after this failure. */
export const fallsBack = (error: ChatProvider.ChatProviderError): boolean => error.reason !== "InvalidRequest"

/** The route named `provider` (the price list's `provider`) over `members`, tried in this order. */
export const make = (provider: string, members: ReadonlyArray<Member>): ChatProvider.ChatProviderV1 => {
  const serving = (model: string) => members.filter((member) => member.models === undefined || member.models.has(model))

  /** Runs `attempt` on each serving upstream in turn until one succeeds or fails for good. */
  const firstOf = <A, R>(
    model: string,
    attempt: (upstream: ChatProvider.ChatProviderV1) => Effect.Effect<A, ChatProvider.ChatProviderError, R>
  ): Effect.Effect<A, ChatProvider.ChatProviderError, R> => {
    const [first, ...rest] = serving(model)
    if (first === undefined) {
      return Effect.fail(
        new ChatProvider.ChatProviderError({ reason: "Unavailable", message: `no configured upstream serves ${model}` })
      )
    }
    return rest.reduce((chain, next) => Effect.catchIf(chain, fallsBack, () => attempt(next.provider)), attempt(first.provider))
  }

  return {
    specificationVersion: "v1",
    provider,
    serves: (model) => serving(model).length > 0,
    complete: (call) => firstOf(call.model, (upstream) => upstream.complete(call)),
    stream: (call) =>
      Effect.flatMap(Effect.scope, (outer) =>
        firstOf(call.model, (upstream) =>
          // Each attempt in a scope of its own, closed at once when it fails, so a refused upstream's connection is not held.
          Effect.flatMap(Scope.fork(outer, "sequential"), (scope) =>
            Effect.gen(function* () {
              const parts = yield* upstream.stream(call)
              const [first, rest] = yield* Stream.peel(parts, Sink.take<ChatProvider.ChatStreamPart>(1))
              return Stream.concat(Stream.fromIterable(first), rest)
            }).pipe(
              Scope.provide(scope),
              Effect.onExit((exit) => (Exit.isFailure(exit) ? Scope.close(scope, exit) : Effect.void))
            )
          )
        )
      )
  }
}
