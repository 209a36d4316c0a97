/**
 * The `taskmeter admin` CLI as an operator runs it (accounts, keys, credits, MCP sign-ins, finding
 * the server): a child process against the composed server, with --url/--token --json, or finding
 * the server through the data directory's admin.json.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Redacted } from "effect"
import { describe, expect, layer } from "@effect/vitest"
import { vi } from "vitest"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import { mcpSignIn } from "./adminSupport.ts"
import { USD, dataDir, token, SERVED_MODEL, TestServer, baseUrl, run, admin, adminFails, apiUrl, api } from "./cliSupport.ts"

// Each command is a fresh Node process (about a second of start-up; over 15 s measured on a 2-core
// machine shared by seven test runs, so a command may take up to a minute before it is killed).
vi.setConfig({ testTimeout: 120_000 })

layer(TestServer, { excludeTestServices: true })("taskmeter admin (child process)", (it) => {
  it.effect("account create's key submits a task that runs, and its charge shows in usage", () =>
    Effect.gen(function* () {
      const created = yield* admin("account", "create", "--name", "acme", "--credits-usd", "25")
      expect(created.account.name).toBe("acme")
      expect(created.balances.availableMicros).toBe(25 * USD)
      const key: string = created.key.secret

      const submitted = yield* api("/api/v1/jobs", key, {
        method: "POST",
        headers: { "idempotency-key": "first-task" },
        body: JSON.stringify({ model: SERVED_MODEL, input: { prompt: "a song about ledgers" } })
      })
      expect(submitted.status).toBe(202)
      const taskId: string = submitted.body.id
      let task = submitted.body
      for (let i = 0; i < 100 && task.status !== "succeeded" && task.status !== "failed"; i++) {
        yield* Effect.sleep("50 millis")
        task = (yield* api(`/api/v1/jobs/${taskId}`, key)).body
      }
      expect(task.status).toBe("succeeded")
      expect(task.assets[0]).toMatchObject({ type: "text", text: expect.any(String) })
      const usage = yield* api("/api/v1/usage", key)
      expect(usage.status).toBe(200)
      expect(JSON.stringify(usage.body)).toContain(String(25 * USD - task.priceMicros))
    })
  )

  it.effect("admin invite mails (into the data dir) and prints a sign-up link; operator add and remove mark the user", () =>
    Effect.gen(function* () {
      const url = yield* apiUrl
      const email = `invited-${Date.now()}@example.com`
      const invitation = yield* admin("invite", email)
      expect(invitation.link).toMatch(new RegExp(`^${url}/sign-up\\?invitation=[A-Za-z0-9_-]{43}$`))
      const mailed = readdirSync(join(dataDir, "mail")).map((file) => readFileSync(join(dataDir, "mail", file), "utf8"))
      expect(mailed.some((text) => text.includes(`To: ${email}`) && text.includes(invitation.link))).toBe(true)

      const signUp = yield* Effect.promise(() =>
        fetch(`${url}/api/v1/auth/sign-up`, {
          method: "POST",
          headers: { "content-type": "application/json", origin: url },
          body: JSON.stringify({
            email,
            password: "correct horse battery staple",
            invitation: new URL(invitation.link).searchParams.get("invitation")
          })
        })
      )
      expect(signUp.status).toBe(201)
      const cookie = signUp.headers.getSetCookie()[0]!.split(";")[0]!
      const operator = () =>
        Effect.promise(async () => {
          const session = await fetch(`${url}/api/v1/auth/session`, { headers: { cookie } })
          return ((await session.json()) as { user: { operator: boolean } }).user.operator
        })
      expect(yield* operator()).toBe(false)
      expect(yield* admin("operator", "add", email.toUpperCase())).toEqual({ email: email.toUpperCase(), operator: true })
      expect(yield* operator()).toBe(true)
      yield* admin("operator", "remove", email)
      expect(yield* operator()).toBe(false)
      expect((yield* adminFails("operator", "add", "nobody@example.com")).reason).toBe("UserNotFound")
    })
  )

  it.effect("account list and show; human output by default", () =>
    Effect.gen(function* () {
      const created = yield* admin("account", "create", "--name", "listed")
      const listed: Array<{ id: string }> = yield* admin("account", "list")
      expect(listed.map((a) => a.id)).toContain(created.account.id)
      const shown = yield* admin("account", "show", "--account", created.account.id)
      expect(shown.keys).toHaveLength(1)

      const url = yield* baseUrl
      const human = yield* run(["admin", "account", "list", "--url", url, "--token", Redacted.value(token)])
      expect(human.code).toBe(0)
      expect(human.stdout).toContain(created.account.id)
      expect(human.stdout).toContain("available")
    })
  )

  it.effect("account retention: days, or the default again; anything else is refused", () =>
    Effect.gen(function* () {
      const { account } = yield* admin("account", "create")
      expect(yield* admin("account", "retention", "--account", account.id, "--days", "7")).toMatchObject({
        accountId: account.id,
        resultRetentionDays: 7
      })
      const url = yield* baseUrl
      const flags = ["--url", url, "--token", Redacted.value(token)]
      const human = yield* run(["admin", "account", "retention", "--account", account.id, "--days", "default", ...flags])
      expect(human.code).toBe(0)
      expect(human.stdout).toContain("the default, 30 days (RESULT_RETENTION)")
      const refused = yield* run(["admin", "account", "retention", "--account", account.id, "--days", "0", ...flags])
      expect(refused.code).not.toBe(0)
      expect(refused.stderr).toContain('--days: "0" is neither a whole number of days')
    })
  )

  it.effect("key create with scopes, key revoke", () =>
    Effect.gen(function* () {
      const { account } = yield* admin("account", "create")
      const key = yield* admin("key", "create", "--account", account.id, "--scopes", "jobs:read usage:read", "--name", "ci")
      expect(key.key).toMatchObject({ name: "ci", scopes: ["jobs:read", "usage:read"] })
      const submit = yield* api("/api/v1/jobs", key.secret, {
        method: "POST",
        headers: { "idempotency-key": "read-only" },
        body: JSON.stringify({ model: SERVED_MODEL, input: { prompt: "x" } })
      })
      expect(submit.body.code).toBe("INSUFFICIENT_SCOPE")
      yield* admin("key", "revoke", "--account", account.id, "--key", key.key.id)
      expect((yield* api("/api/v1/usage", key.secret)).body.code).toBe("PERMISSION_DENIED")
      expect((yield* adminFails("key", "revoke", "--account", account.id, "--key", "key_nope")).reason).toBe("KeyNotFound")
    })
  )

  it.effect("credits grant and refund, amounts read exactly", () =>
    Effect.gen(function* () {
      const { account } = yield* admin("account", "create")
      const granted = yield* admin(
        "credits",
        "grant",
        "--account",
        account.id,
        "--usd",
        "10.000001",
        "--note",
        "wire",
        "--ref",
        "pay_1"
      )
      expect(granted.entry).toMatchObject({ kind: "grant", amountMicros: 10_000_001, note: "wire" })
      expect((yield* admin("credits", "grant", "--account", account.id, "--usd", "10.000001", "--ref", "pay_1")).entry.id).toBe(
        granted.entry.id
      )
      const refunded = yield* admin("refund", "--account", account.id, "--usd", "0.1")
      expect(refunded.balances.balanceMicros).toBe(9_900_001)

      const url = yield* baseUrl
      for (const usd of ["1e3", "99999999999"]) {
        const bad = yield* run([
          "admin",
          "credits",
          "grant",
          "--url",
          url,
          "--token",
          Redacted.value(token),
          "--account",
          account.id,
          "--usd",
          usd
        ])
        expect(bad.code).not.toBe(0)
        expect(bad.stderr).toContain(`--usd: "${usd}" is not an amount in USD`)
      }
      expect((yield* admin("account", "show", "--account", account.id)).balances.balanceMicros).toBe(9_900_001)
      expect((yield* adminFails("credits", "grant", "--account", "acct_nope", "--usd", "1")).reason).toBe("AccountNotFound")
    })
  )

  it.effect("audit reports balanced books", () =>
    Effect.gen(function* () {
      expect(yield* admin("audit")).toEqual([])
    })
  )

  it.effect("signin-code prints a one-time MCP sign-in code for the account", () =>
    Effect.gen(function* () {
      const { account } = yield* admin("account", "create", "--name", "mcp")
      const created = yield* admin("signin-code", "--account", account.id)
      expect(created).toEqual({ accountId: account.id, code: expect.stringMatching(/^tmsi_/), expiresAt: expect.any(String) })
      expect(Date.parse(created.expiresAt)).toBeGreaterThan(Date.now())
    })
  )

  it.effect("mcp sign-ins list and revoke an account's MCP sign-ins, for people and with --json", () =>
    Effect.gen(function* () {
      const url = yield* baseUrl
      const { account } = yield* admin("account", "create", "--name", "mcp-sign-ins")
      const signIn = yield* mcpSignIn(account.id, url)
      const listed = yield* admin("mcp", "sign-ins", "list", "--account", account.id)
      expect(listed).toEqual([expect.objectContaining({ id: signIn.grantId, accountId: account.id, clientId: signIn.clientId })])
      const human = yield* run([
        "admin",
        "mcp",
        "sign-ins",
        "list",
        "--account",
        account.id,
        "--url",
        url,
        "--token",
        Redacted.value(token)
      ])
      expect(human.code).toBe(0)
      expect(human.stdout).toContain(signIn.grantId)
      expect(human.stdout).toContain("with a sign-in code")

      const revoked = yield* run([
        "admin",
        "mcp",
        "sign-ins",
        "revoke",
        signIn.grantId,
        "--url",
        url,
        "--token",
        Redacted.value(token)
      ])
      expect(revoked.code).toBe(0)
      expect(revoked.stdout).toContain(`MCP sign-in ${signIn.grantId} of ${account.id} revoked`)
      expect(yield* admin("mcp", "sign-ins", "list", "--account", account.id)).toEqual([])
      expect(yield* admin("mcp", "sign-ins", "revoke", signIn.grantId)).toMatchObject({ alreadyRevoked: true })
      expect((yield* adminFails("mcp", "sign-ins", "revoke", crypto.randomUUID())).reason).toBe("SignInNotFound")
    })
  )

  describe("finding the server", () => {
    it.effect("from <data-dir>/admin.json, with no --url or --token", () =>
      Effect.gen(function* () {
        const result = yield* run(["admin", "account", "list", "--json"], { DATA_DIR: dataDir })
        expect(result.code).toBe(0)
        expect(Array.isArray(JSON.parse(result.stdout))).toBe(true)
      })
    )

    it.effect(
      "the token of TASKMETER_ADMIN_TOKEN wins over --token (which shows in ps), with a warning; --token alone works",
      () =>
        Effect.gen(function* () {
          const url = yield* baseUrl
          const both = yield* run(
            ["admin", "account", "list", "--json", "--url", url, "--token", Redacted.value(OperatorToken.generate())],
            { TASKMETER_ADMIN_TOKEN: Redacted.value(token) }
          )
          expect(both.code).toBe(0)
          expect(both.stderr).toContain("warning: --token is ignored: TASKMETER_ADMIN_TOKEN is set")
          const flagOnly = yield* run(["admin", "account", "list", "--json", "--url", url, "--token", Redacted.value(token)])
          expect(flagOnly.code).toBe(0)
          expect(flagOnly.stderr).toBe("")
        })
    )

    it.effect("the public port does not serve the admin service", () =>
      Effect.gen(function* () {
        const result = yield* run(["admin", "account", "list", "--json", "--url", yield* apiUrl], {
          TASKMETER_ADMIN_TOKEN: Redacted.value(token)
        })
        expect(result.code).toBe(1)
        expect(JSON.parse(result.stderr).error.reason).toBe("NotAdminService")
      })
    )

    it.effect("a wrong token exits 1 with AuthRequired; without an admin file or token it says what to do", () =>
      Effect.gen(function* () {
        const url = yield* baseUrl
        const wrong = yield* run(["admin", "account", "list", "--json"], {
          TASKMETER_URL: url,
          TASKMETER_ADMIN_TOKEN: Redacted.value(OperatorToken.generate())
        })
        expect(wrong.code).toBe(1)
        expect(JSON.parse(wrong.stderr).error.reason).toBe("AuthRequired")
        const none = yield* run(["admin", "account", "list"])
        expect(none.code).toBe(1)
        expect(none.stderr).toContain("npm start")
        // The admin file's token goes to the admin file's server only.
        const elsewhere = yield* run(["admin", "account", "list", "--json", "--url", "http://127.0.0.1:9"], { DATA_DIR: dataDir })
        expect(elsewhere.code).toBe(1)
        expect(JSON.parse(elsewhere.stderr).error.reason).toBe("NoToken")
      })
    )
  })
})
