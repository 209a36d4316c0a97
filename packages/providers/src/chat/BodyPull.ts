/**
 * The body of a node:http response read as UTF-8 text, one pull at a time (`make`) or whole
 * (`whole`). A pull gives all the text buffered (a network chunk or more), at once when some is
 * there, else when the next arrives; undefined once the body has ended. A wait longer than `idleMs`
 * fails with `onIdle()`, a body broken off (error, or closed before its end) with `onBroken(cause)`.
 * No fiber and no timer is started for text already buffered; interrupting a wait only stops
 * listening. `whole` fails with `onLate()` when the body has not ended within `withinMs`, and past
 * `maxBytes` with `onBroken(BodyTooLarge)`; interrupted, late or too large, the response is destroyed.
 */
import type { IncomingMessage } from "node:http"
import { Effect } from "effect"
import { BodyTooLarge } from "../utils/CappedBody.ts"

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

export const whole = <E>(
  response: IncomingMessage,
  maxBytes: number,
  withinMs: number,
  onLate: () => E,
  onBroken: (cause: unknown) => E
): Effect.Effect<string, E> =>
  Effect.callback<string, E>((resume) => {
    if (response.destroyed) {
      resume(Effect.fail(onBroken(response.errored ?? new Error("the body was given up before it ended"))))
      return
    }
    const chunks: Array<Buffer> = []
    let size = 0
    let settled = false
    const stop = () => {
      settled = true
      clearTimeout(timer)
      response.off("data", onData)
      response.off("error", onError)
      response.off("close", onClose)
    }
    const settle = (effect: Effect.Effect<string, E>) => {
      if (settled) return
      stop()
      resume(effect)
    }
    const give = (cause: unknown) => {
      settle(Effect.fail(onBroken(cause)))
      response.destroy()
    }
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength
      if (size > maxBytes) give(new BodyTooLarge(`the body is larger than ${maxBytes} bytes`))
      else chunks.push(chunk)
    }
    const onError = (cause: unknown) => settle(Effect.fail(onBroken(cause)))
    // Its close, not its end: a keep-alive socket goes back to the pool between the two, free for the next post.
    const onClose = () =>
      settle(
        response.readableEnded
          ? Effect.succeed(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8"))
          : Effect.fail(onBroken(response.errored ?? new Error("the connection closed before the body ended")))
      )
    const timer = setTimeout(() => {
      settle(Effect.fail(onLate()))
      response.destroy()
    }, withinMs)
    response.on("data", onData)
    response.on("error", onError)
    response.on("close", onClose)
    return Effect.sync(() => {
      stop()
      response.destroy()
    })
  })
