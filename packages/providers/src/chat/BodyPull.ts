/**
 * The body of a node:http response read as UTF-8 text, one pull at a time: a pull gives all the
 * text buffered (a network chunk or more), at once when some is there, else when the next arrives;
 * undefined once the body has ended. A wait longer than `idleMs` fails with `onIdle()`, a body
 * broken off (error, or closed before its end) with `onBroken(cause)`. No fiber and no timer is
 * started for text already buffered; interrupting a wait only stops listening.
 */
import type { IncomingMessage } from "node:http"
import { Effect } from "effect"

export const make = <E>(
  response: IncomingMessage,
  idleMs: number,
  onIdle: () => E,
  onBroken: (cause: unknown) => E
): Effect.Effect<string | undefined, E> => {
  response.setEncoding("utf8")
  const wait = Effect.callback<string | undefined, E>((resume) => {
    let settled = false
    const stop = () => {
      settled = true
      clearTimeout(timer)
      response.off("readable", onReadable)
      response.off("end", onEnd)
      response.off("error", onError)
      response.off("close", onClose)
    }
    const settle = (effect: Effect.Effect<string | undefined, E>) => {
      if (settled) return
      stop()
      resume(effect)
    }
    const onReadable = () => {
      const text = response.read() as string | null
      if (text !== null) settle(Effect.succeed(text))
    }
    const onEnd = () => settle(Effect.succeed(undefined))
    const onError = (cause: unknown) => settle(Effect.fail(onBroken(cause)))
    const onClose = () => {
      if (!response.readableEnded) settle(Effect.fail(onBroken(new Error("the connection closed before the body ended"))))
    }
    const timer = setTimeout(() => settle(Effect.fail(onIdle())), idleMs)
    response.on("readable", onReadable)
    response.on("end", onEnd)
    response.on("error", onError)
    response.on("close", onClose)
    return Effect.sync(stop)
  })
  return Effect.suspend(() => {
    if (response.readableEnded) return Effect.succeed(undefined)
    const text = response.read() as string | null
    if (text !== null) return Effect.succeed(text)
    return response.destroyed
      ? Effect.fail(onBroken(response.errored ?? new Error("the body was given up before it ended")))
      : wait
  })
}
