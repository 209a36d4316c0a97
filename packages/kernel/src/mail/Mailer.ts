/**
 * The mail port: every message the service sends (email verification, password reset,
 * invitations, notices such as a disabled webhook endpoint) goes through one Mailer. Sending is
 * at most once per call; a failure is a MailError and the caller decides whether it matters.
 * Adapters: `memory` (kept in a list, for tests and embedding) here; SMTP and the embedded
 * default's log-and-data-dir writer live with the servers that configure them.
 */
import { Context, Effect, Layer, Schema } from "effect"

export interface MailMessage {
  readonly to: string
  readonly subject: string
  /** The plain-text body; every message has one. */
  readonly text: string
  /** An optional HTML alternative of the same content. */
  readonly html?: string | undefined
}

export class MailError extends Schema.TaggedError<MailError>()("MailError", {
  message: Schema.String
}) {}

export class Mailer extends Context.Service<
  Mailer,
  {
    readonly send: (message: MailMessage) => Effect.Effect<void, MailError>
  }
>()("@taskmeter/kernel/Mailer") {}

/** A Mailer that keeps what it sends, newest last, for tests and embedding. */
export interface MemoryMailer {
  readonly mailer: Mailer["Service"]
  readonly sent: ReadonlyArray<MailMessage>
}

export const makeMemory = (): MemoryMailer => {
  const sent: Array<MailMessage> = []
  return {
    sent,
    mailer: Mailer.of({ send: (message) => Effect.sync(() => void sent.push(message)) })
  }
}

export const layerMemory = (memory: MemoryMailer = makeMemory()): Layer.Layer<Mailer> => Layer.succeed(Mailer, memory.mailer)
