/**
 * The Mailer port over SMTP (nodemailer) at SMTP_URL, e.g. `smtps://user:pass@mail.example.com`
 * or `smtp://127.0.0.1:2525`; messages come from MAIL_FROM. A refused or failed send is a
 * MailError naming the SMTP answer, never the message's content.
 */
import { Effect, Layer, Redacted } from "effect"
import { createTransport } from "nodemailer"
import { Mailer } from "@taskmeter/kernel"

export interface Options {
  readonly url: Redacted.Redacted<string>
  readonly from: string
}

export const layer = (options: Options): Layer.Layer<Mailer.Mailer> =>
  Layer.effect(
    Mailer.Mailer,
    Effect.acquireRelease(
      Effect.sync(() => createTransport(Redacted.value(options.url))),
      (transport) => Effect.sync(() => transport.close())
    ).pipe(
      Effect.map((transport) =>
        Mailer.Mailer.of({
          send: (message) =>
            Effect.tryPromise({
              try: () =>
                transport.sendMail({
                  from: options.from,
                  to: message.to,
                  subject: message.subject,
                  text: message.text,
                  ...(message.html === undefined ? {} : { html: message.html })
                }),
              catch: (cause) =>
                new Mailer.MailError({
                  message: `SMTP refused the message: ${cause instanceof Error ? cause.message : String(cause)}`
                })
            }).pipe(Effect.asVoid)
        })
      )
    )
  )
