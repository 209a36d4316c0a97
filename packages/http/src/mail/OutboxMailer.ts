/**
 * The Mailer of `npm start`'s embedded default, when no SMTP_URL is set: each message is logged
 * (with the links it holds, so sign-up works offline) and written as `<dataDir>/mail/<time>-<pid>-<n>.eml`,
 * a file any mail program opens; a server and a worker sharing one DATA_DIR never write the same
 * name, and no file is ever overwritten. Nothing leaves the machine.
 */
import { mkdir, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { Clock, Effect, Layer } from "effect"
import { Mailer } from "@taskmeter/kernel"

export const directoryOf = (dataDir: string): string => join(dataDir, "mail")

const LINK = /https?:\/\/\S+/g

/** The message as an RFC 5322 text: headers, a blank line, the plain-text body. */
export const eml = (message: Mailer.MailMessage, from: string, date: Date): string =>
  [
    `From: ${from}`,
    `To: ${message.to}`,
    `Subject: ${message.subject}`,
    `Date: ${date.toUTCString()}`,
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
    "Content-Transfer-Encoding: 8bit",
    "",
    message.text.replaceAll(/\r?\n/g, "\r\n")
  ].join("\r\n")

/** Counts this process's messages over every layer built in it; the pid separates processes. */
let sent = 0

export const layer = (options: { readonly dataDir: string; readonly from: string }): Layer.Layer<Mailer.Mailer> => {
  const directory = directoryOf(options.dataDir)
  return Layer.succeed(
    Mailer.Mailer,
    Mailer.Mailer.of({
      send: (message) =>
        Effect.gen(function* () {
          const date = new Date(yield* Clock.currentTimeMillis)
          sent += 1
          const file = join(directory, `${date.toISOString().replaceAll(":", "-")}-${process.pid}-${sent}.eml`)
          yield* Effect.tryPromise({
            try: async () => {
              await mkdir(directory, { recursive: true, mode: 0o700 })
              await writeFile(file, eml(message, options.from, date), { mode: 0o600, flag: "wx" })
            },
            catch: (cause) => new Mailer.MailError({ message: `Could not write ${file}: ${String(cause)}` })
          })
          const links = message.text.match(LINK) ?? []
          yield* Effect.logInfo(`Mail to ${message.to}: "${message.subject}" (written to ${file})`).pipe(
            Effect.annotateLogs({ links: links.join(" ") })
          )
        })
    })
  )
}
