/**
 * The console's mail through a real SMTP server started in this process: the verification link
 * read out of the received message works, and the password reset flow ends the user's sessions.
 * The embedded default's outbox writes each message as a .eml under the data dir and logs its link.
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it, layer } from "@effect/vitest"
import { Effect, Logger, Redacted, References } from "effect"
import { Mailer } from "@taskmeter/kernel"
import { OutboxMailer, SmtpMailer } from "../src/index.ts"
import * as C from "./support/Console.ts"
import * as SmtpInbox from "./support/SmtpInbox.ts"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const inbox = await SmtpInbox.start()
afterAll(() => inbox.close())

/** The newest message to `email`, waiting for it a little (sending may finish after the answer). */
const mailTo = (email: string, subject: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 100; i++) {
      const found = inbox.received.findLast((message) => message.to.includes(email) && message.text.includes(subject))
      if (found !== undefined) return found
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.die(`no mail "${subject}" to ${email}`)
  })

const tokenIn = (text: string, path: string): string => {
  const match = new RegExp(`http://taskmeter\\.test${path}\\?token=([A-Za-z0-9_-]+)`).exec(text)
  if (match === null) throw new Error(`no ${path} link in ${text}`)
  return match[1]!
}

const mailer = SmtpMailer.layer({ url: Redacted.make(inbox.url), from: "taskmeter <noreply@taskmeter.test>" })

layer(T.layer(stores[0]!, { mailer }), { excludeTestServices: true })("console mail over SMTP", (it) => {
  it.effect("mails the verification link at sign-up; the link read out of the received mail verifies the email", () =>
    Effect.gen(function* () {
      const who = yield* C.signUp()
      const message = yield* mailTo(who.email, "Verify your email")
      expect(message.from).toBe("noreply@taskmeter.test")
      const verified = yield* C.post("/api/v1/auth/verify-email", { token: tokenIn(message.text, "/verify-email") })
      expect(verified.status).toBe(204)
      expect((yield* C.under(who, "/api/v1/auth/session")).body.user.emailVerified).toBe(true)
    })
  )

  it.effect("resets a password through the mailed link, ending every session; the old password and the link stop working", () =>
    Effect.gen(function* () {
      const who = yield* C.signUp()
      const other = yield* C.signIn(who.email)
      const asked = yield* C.post("/api/v1/auth/password-reset", { email: who.email.toUpperCase() })
      expect(asked.status).toBe(202)
      const unknown = yield* C.post("/api/v1/auth/password-reset", { email: C.uniqueEmail("nobody") })
      expect([unknown.status, unknown.text]).toEqual([asked.status, asked.text])
      const token = tokenIn((yield* mailTo(who.email, "Reset your taskmeter password")).text, "/reset-password")

      const short = yield* C.post("/api/v1/auth/password-reset/confirm", { token, password: "short" })
      expect([short.status, short.body.code]).toEqual([400, "INVALID_REQUEST"])
      const confirmed = yield* C.post("/api/v1/auth/password-reset/confirm", { token, password: "a brand new passphrase" })
      expect(confirmed.status).toBe(204)
      for (const session of [who, other]) expect((yield* C.under(session, "/api/v1/auth/session")).status).toBe(401)
      const oldPassword = yield* C.post("/api/v1/auth/sign-in", { email: who.email, password: C.PASSWORD })
      expect(oldPassword.body.code).toBe("AUTH_REQUIRED")
      const signedIn = yield* C.signIn(who.email, "a brand new passphrase")
      expect((yield* C.under(signedIn, "/api/v1/auth/session")).body.user.emailVerified).toBe(true)
      const reused = yield* C.post("/api/v1/auth/password-reset/confirm", { token, password: "another new passphrase" })
      expect([reused.status, reused.body.code]).toEqual([400, "INVALID_REQUEST"])
    })
  )
})

describe("the outbox mailer of the embedded default", () => {
  it.effect("writes each message as a .eml file under <dataDir>/mail and logs its link", () =>
    Effect.gen(function* () {
      const dataDir = yield* Effect.acquireRelease(
        Effect.promise(() => mkdtemp(join(tmpdir(), "taskmeter-outbox-"))),
        (directory) => Effect.promise(() => rm(directory, { recursive: true, force: true }))
      )
      const logged: Array<string> = []
      const logger = Logger.make<unknown, void>(({ message, fiber }) => {
        logged.push(`${String(message)} ${JSON.stringify(fiber.getRef(References.CurrentLogAnnotations))}`)
      })
      yield* Mailer.Mailer.use((mailer) =>
        mailer.send({
          to: "ada@example.com",
          subject: "Verify",
          text: "Open http://taskmeter.test/verify-email?token=abc\nThanks"
        })
      ).pipe(
        Effect.provide(OutboxMailer.layer({ dataDir, from: "taskmeter <taskmeter@localhost>" })),
        Effect.provide(Logger.layer([logger]))
      )
      const files = yield* Effect.promise(() => readdir(OutboxMailer.directoryOf(dataDir)))
      expect(files).toHaveLength(1)
      expect(files[0]).toMatch(/\.eml$/)
      const eml = yield* Effect.promise(() => readFile(join(OutboxMailer.directoryOf(dataDir), files[0]!), "utf8"))
      expect(eml).toContain("To: ada@example.com\r\n")
      expect(eml).toContain("Subject: Verify\r\n")
      expect(eml).toContain("\r\n\r\nOpen http://taskmeter.test/verify-email?token=abc\r\nThanks")
      expect(logged.join("\n")).toContain("http://taskmeter.test/verify-email?token=abc")
    }).pipe(Effect.scoped)
  )

  it.effect("never overwrites a message: two writers on one data dir at the same instant keep both", () =>
    Effect.gen(function* () {
      const dataDir = yield* Effect.acquireRelease(
        Effect.promise(() => mkdtemp(join(tmpdir(), "taskmeter-outbox-"))),
        (directory) => Effect.promise(() => rm(directory, { recursive: true, force: true }))
      )
      const send = (to: string) =>
        Mailer.Mailer.use((mailer) => mailer.send({ to, subject: "Verify", text: "Hello" })).pipe(
          Effect.provide(OutboxMailer.layer({ dataDir, from: "taskmeter <taskmeter@localhost>" })),
          Effect.provide(Logger.layer([]))
        )
      yield* send("ada@example.com")
      yield* send("grace@example.com")
      const files = yield* Effect.promise(() => readdir(OutboxMailer.directoryOf(dataDir)))
      expect(files).toHaveLength(2)
      for (const file of files) expect(file).toContain(`-${process.pid}-`)
      const bodies = yield* Effect.promise(() =>
        Promise.all(files.map((file) => readFile(join(OutboxMailer.directoryOf(dataDir), file), "utf8")))
      )
      expect(bodies.map((body) => /^To: (.*)\r$/m.exec(body)?.[1]).sort()).toEqual(["ada@example.com", "grace@example.com"])
    }).pipe(Effect.scoped)
  )
})
