/**
 * The sign-in throttle held across processes: two Users layers, each on its own PgStore over one
 * PostgreSQL schema (as two server processes are), share the failures of an email and of an
 * address, so N processes do not allow N times as many.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { Errors, Mailer, Money, Sessions, Users } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import { dropSchemaAfter, schemaName, url } from "./TestDatabase.ts"

const usersOn = (schema: string) =>
  Users.layer({
    publicBaseUrl: "http://taskmeter.test",
    signUp: "open",
    signUpCreditsMicros: Money.ZERO,
    maxFailuresPerEmail: 2
  }).pipe(
    Layer.provide(Sessions.layer()),
    Layer.provide(Mailer.layerMemory()),
    Layer.provideMerge(PgStore.layer({ url, schema, maxConnections: 2 }))
  )

const signInVia = (users: Users.Users["Service"], email: string, password: string, clientAddress: string) =>
  users.signIn({ email, password, clientAddress }).pipe(
    Effect.map(() => "signed in"),
    Effect.catch((error) => Effect.succeed(error instanceof Errors.RateLimited ? "RATE_LIMITED" : error._tag))
  )

describe("sign-in throttle on PostgreSQL", () => {
  it.live(
    "two processes on one database share the failures of an email and of an address",
    () =>
      Effect.gen(function* () {
        const schema = schemaName()
        yield* Layer.build(dropSchemaAfter(schema))
        const a = Context.get(yield* Layer.build(usersOn(schema)), Users.Users)
        const b = Context.get(yield* Layer.build(usersOn(schema)), Users.Users)
        yield* a.signUp({ email: "ada@example.com", password: "correct horse battery" })

        expect(yield* signInVia(a, "ada@example.com", "wrong password", "10.0.0.1")).toBe("AuthRequired")
        expect(yield* signInVia(b, "ADA@example.com", "wrong password", "10.0.0.2")).toBe("AuthRequired")
        // Each process has seen one failure; together they are at the email's limit of 2.
        expect(yield* signInVia(a, "ada@example.com", "correct horse battery", "10.0.0.3")).toBe("RATE_LIMITED")
        expect(yield* signInVia(b, "ada@example.com", "correct horse battery", "10.0.0.3")).toBe("RATE_LIMITED")

        // Per address: 20 failures (ten times the email's) from one address over both processes.
        for (let i = 0; i < 20; i++) {
          const users = i % 2 === 0 ? a : b
          expect(yield* signInVia(users, `nobody${i}@example.com`, "x", "10.0.0.9")).toBe("AuthRequired")
        }
        expect(yield* signInVia(a, "someone@example.com", "x", "10.0.0.9")).toBe("RATE_LIMITED")
        expect(yield* signInVia(b, "someone@example.com", "x", "10.0.0.9")).toBe("RATE_LIMITED")
      }).pipe(Effect.scoped),
    120_000
  )
})
