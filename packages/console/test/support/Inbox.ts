/**
 * A real SMTP server (smtp-server) on an ephemeral port of 127.0.0.1, started for a test's layer
 * and closed with it, keeping every message it receives; `linkTo` finds a link in the latest
 * message to an address.
 */
import { Context, Effect, Layer } from "effect"
import { SMTPServer } from "smtp-server"

export interface Message {
  readonly to: ReadonlyArray<string>
  readonly raw: string
}

export class Inbox extends Context.Service<Inbox, { readonly port: number; readonly messages: ReadonlyArray<Message> }>()(
  "test/Inbox"
) {}

/** The text of a raw message with quoted-printable soft breaks and escapes undone. */
const decoded = (raw: string): string =>
  raw.replace(/=\r?\n/gu, "").replace(/=([0-9A-F]{2})/gu, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))

/** The first link of the latest message to `to` whose path is `path`, if one arrived. */
export const linkTo = (messages: ReadonlyArray<Message>, to: string, path: string): string | undefined => {
  const latest = messages.filter((message) => message.to.includes(to)).at(-1)
  if (latest === undefined) return undefined
  const escaped = path.replace(/[/?]/gu, "\\$&")
  return new RegExp(`https?://[^\\s"<>]+${escaped}\\?token=[A-Za-z0-9_-]+`, "u").exec(decoded(latest.raw))?.[0]
}

export const layer = Layer.effect(
  Inbox,
  Effect.acquireRelease(
    Effect.callback<{ server: SMTPServer; port: number; messages: Array<Message> }>((resume) => {
      const messages: Array<Message> = []
      const server = new SMTPServer({
        authOptional: true,
        disabledCommands: ["STARTTLS", "AUTH"],
        onData(stream, session, callback) {
          let raw = ""
          stream.on("data", (chunk: Buffer) => {
            raw += chunk.toString("utf8")
          })
          stream.on("end", () => {
            messages.push({ to: session.envelope.rcptTo.map((rcpt) => rcpt.address), raw })
            callback()
          })
        }
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.server.address()
        resume(Effect.succeed({ server, port: typeof address === "object" && address !== null ? address.port : 0, messages }))
      })
    }),
    ({ server }) => Effect.callback<void>((resume) => server.close(() => resume(Effect.void)))
  ).pipe(Effect.map(({ port, messages }) => ({ port, messages })))
)
