/**
 * The `taskmeter admin` CLI as an operator runs it: a child process against the composed server
 * (storage-memory, in-process workers on the simulated provider) on an ephemeral port, with
 * --url/--token --json, or finding the server through the data directory's admin.json.
 */
import { execFile } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { describe, expect, layer } from "@effect/vitest"
import { vi } from "vitest"
import { OAuthStore } from "@taskmeter/mcp"
import { Simulated } from "@taskmeter/providers"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Main from "../src/main.ts"
import * as ServerConfig from "../src/ServerConfig.ts"
import * as Dependencies from "../../../test/Dependencies.ts"
import { heldTask, mcpSignIn } from "./adminSupport.ts"

// Each command is a fresh Node process (about a second of start-up; over 15 s measured on a 2-core
// machine shared by seven test runs, so a command may take up to a minute before it is killed).
vi.setConfig({ testTimeout: 120_000 })

const BIN = fileURLToPath(new URL("../bin/taskmeter.ts", import.meta.url))
const USD = 1_000_000
const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-cli-"))
const token = OperatorToken.generate()
/** Served by the workers; HELD_MODEL is not, so tasks held for the resolve test stay put. */
const SERVED_MODEL = "song-lyrics"
const HELD_MODEL = "song-single-v5"

const TestServer = Main.server({
  settings: Main.defaults,
  adapters: [Simulated.make({ models: [SERVED_MODEL] })],
  pricesFile: Main.pricesFileOf(dataDir),
  token,
  dataDir
}).pipe(
  Layer.provideMerge(Layer.merge(MemoryStore.layer, OAuthStore.layerMemory)),
  Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminPort: 0 }))
)

/** The admin listener's address, which the CLI calls. */
const baseUrl = Main.adminUrl

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs the CLI with `args`, an empty environment but PATH (and the compile cache), and no admin file unless told. */
const run = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.callback<Run>((resume) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...Dependencies.childEnv, DATA_DIR: join(dataDir, "elsewhere"), ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resume(Effect.succeed({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
    )
  })

/** `taskmeter admin --url <admin listener> --json ...args` with TASKMETER_ADMIN_TOKEN, which must succeed; its JSON. */
const admin = (...args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const url = yield* baseUrl
    const result = yield* run(["admin", "--url", url, "--json", ...args], { TASKMETER_ADMIN_TOKEN: Redacted.value(token) })
    expect(result.stderr, `taskmeter admin ${args.join(" ")}`).toBe("")
    expect(result.code).toBe(0)
    return JSON.parse(result.stdout) as any
  })

/** The same, expected to fail: the error of its JSON report. */
const adminFails = (...args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const url = yield* baseUrl
    const result = yield* run(["admin", "--url", url, "--json", ...args], { TASKMETER_ADMIN_TOKEN: Redacted.value(token) })
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    return (JSON.parse(result.stderr) as { error: { reason: string; message: string } }).error
  })

/** The public API's address. */
const apiUrl = Effect.map(HttpServer.HttpServer, (server) => HttpServer.formatAddress(server.address))

const api = (path: string, key: string, init: RequestInit = {}) =>
  Effect.flatMap(apiUrl, (url) =>
    Effect.promise(async () => {
      const response = await fetch(`${url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers }
      })
      return { status: response.status, body: (await response.json()) as any }
    })
  )

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

  it.effect("price set (micros, usd, rate card), price disable, price list", () =>
    Effect.gen(function* () {
      expect(yield* admin("price", "set", "--model", "alpha-2-lite-text-to-image-economy", "--micros", "31000")).toEqual({
        enabled: true,
        priceMicros: 31_000
      })
      expect(yield* admin("price", "set", "--model", "alpha-2-lite-text-to-image-economy", "--usd", "0.032")).toEqual({
        enabled: true,
        priceMicros: 32_000
      })
      const rateCard = [
        { when: { resolution: ["1k", "2k"] }, priceMicros: 50_000 },
        { when: { resolution: "4k" }, priceMicros: 90_000 }
      ]
      expect(
        yield* admin("price", "set", "--model", "alpha-2-text-to-image-economy", "--rate-card", JSON.stringify(rateCard))
      ).toEqual({ enabled: true, rateCard })
      yield* admin("price", "disable", "--model", "alpha-2-text-to-image-economy")
      const list = yield* admin("price", "list")
      expect(list.models["alpha-2-lite-text-to-image-economy"]).toEqual({ enabled: true, priceMicros: 32_000 })
      expect(list.models["alpha-2-text-to-image-economy"]).toEqual({ enabled: false, rateCard })
      const refused = yield* adminFails(
        "price",
        "set",
        "--model",
        "alpha-2-text-to-image-economy",
        "--rate-card",
        '[{"when":{},"priceMicros":1},{"when":{},"priceMicros":2}]'
      )
      expect(refused.reason).toBe("PriceListInvalid")
    })
  )

  it.effect("chat-price set (tiers, a new model), chat-price disable, chat-price list", () =>
    Effect.gen(function* () {
      const tiers = [
        { upToPromptTokens: 8000, promptMicrosPerMillion: 120_000, completionMicrosPerMillion: 480_000 },
        { upToPromptTokens: null, promptMicrosPerMillion: 240_000, completionMicrosPerMillion: 960_000 }
      ]
      expect(yield* admin("chat-price", "set", "--model", "taskmeter-local", "--tiers", JSON.stringify(tiers))).toMatchObject({
        enabled: true,
        provider: "local",
        contextLength: 32_768,
        tiers
      })
      const added = yield* admin(
        "chat-price",
        "set",
        "--model",
        "local-small",
        "--provider",
        "local",
        "--context-length",
        "4096",
        "--tiers",
        JSON.stringify(tiers.slice(1))
      )
      expect(added).toEqual({ enabled: true, provider: "local", contextLength: 4096, tiers: tiers.slice(1) })
      yield* admin("chat-price", "disable", "--model", "local-small")
      const list = yield* admin("chat-price", "list")
      expect(list.models["taskmeter-local"].tiers).toEqual(tiers)
      expect(list.models["local-small"].enabled).toBe(false)
      // A new model without its upstream and context length is refused, naming what is missing.
      const refused = yield* adminFails("chat-price", "set", "--model", "other", "--tiers", JSON.stringify(tiers))
      expect(refused.reason).toBe("PriceListInvalid")
      expect(refused.message).toContain("provider")
    })
  )

  it.effect("price set --daily-budget-usd: alone, with a price, kept by a price change, removed with none", () =>
    Effect.gen(function* () {
      const model = "alpha-pro-text-to-image-economy"
      const before = (yield* admin("price", "list")).models[model]
      expect(before.rateCard).toBeDefined()
      // A budget alone leaves the rate card as it is.
      expect(yield* admin("price", "set", "--model", model, "--daily-budget-usd", "100.000001")).toEqual({
        ...before,
        dailyBudgetMicros: 100_000_001
      })
      expect(yield* admin("price", "set", "--model", model, "--usd", "0.09")).toEqual({
        enabled: true,
        priceMicros: 90_000,
        dailyBudgetMicros: 100_000_001
      })
      expect(yield* admin("price", "set", "--model", model, "--micros", "95000", "--daily-budget-usd", "2.5")).toEqual({
        enabled: true,
        priceMicros: 95_000,
        dailyBudgetMicros: 2_500_000
      })

      const url = yield* baseUrl
      const flags = ["--url", url, "--token", Redacted.value(token)]
      const listed = yield* run(["admin", ...flags, "price", "list"])
      expect(listed.stdout).toContain(`${model}  enabled  0.095000 USD  daily budget 2.500000 USD`)
      for (const bad of ["0", "lots"]) {
        const refused = yield* run(["admin", ...flags, "price", "set", "--model", model, "--daily-budget-usd", bad])
        expect(refused.code).not.toBe(0)
        expect(refused.stderr).toContain("--daily-budget-usd")
      }
      const nothing = yield* run(["admin", ...flags, "price", "set", "--model", model])
      expect(nothing.code).toBe(1)
      expect(nothing.stderr).toContain("--daily-budget-usd")

      expect(yield* admin("price", "set", "--model", model, "--daily-budget-usd", "none")).toEqual({
        enabled: true,
        priceMicros: 95_000
      })
    })
  )

  it.effect("task list shows the operator queue; task resolve settles with results and a reason", () =>
    Effect.gen(function* () {
      const { account } = yield* admin("account", "create", "--credits-usd", "5")
      const succeeded = yield* heldTask(account.id, 2 * USD, HELD_MODEL, "submit: HTTP 502 from the upstream")
      const failed = yield* heldTask(account.id, USD, HELD_MODEL)
      const queue = (yield* admin("task", "list", "--status", "reconciliation_required")) as {
        tasks: Array<{ id: string; upstreamAnswer: string | null; priceMicros: number }>
      }
      expect(queue.tasks.find((t) => t.id === succeeded)).toMatchObject({
        priceMicros: 2 * USD,
        upstreamAnswer: "submit: HTTP 502 from the upstream"
      })
      const url = yield* baseUrl
      const shown = yield* run([
        "admin",
        "--url",
        url,
        "--token",
        Redacted.value(token),
        "task",
        "list",
        "--status",
        "reconciliation_required"
      ])
      expect(shown.stdout).toContain(`${succeeded}  ${HELD_MODEL}  ${account.id}  price 2.000000 USD`)
      expect(shown.stdout).toContain("last upstream answer: submit: HTTP 502 from the upstream")

      const withoutResults = ["task", "resolve", "--task", succeeded, "--account", account.id, "--outcome", "succeeded"]
      expect((yield* adminFails(...withoutResults, "--reason", "seen upstream")).reason).toBe("InvalidRequest")
      const file = join(mkdtempSync(join(tmpdir(), "taskmeter-result-")), "lyrics.txt")
      writeFileSync(file, "la la la\n")
      const resolved = yield* admin(...withoutResults, "--charge-usd", "1.5", "--result-file", file, "--reason", "seen upstream")
      expect(resolved).toMatchObject({ status: "succeeded", chargedMicros: 1_500_000 })
      expect(yield* admin("task", "resolve", "--task", failed, "--outcome", "failed", "--reason", "never ran")).toMatchObject({
        status: "failed"
      })
      const balances = yield* admin("account", "show", "--account", account.id)
      expect(balances.balances).toMatchObject({ balanceMicros: 3_500_000, reservedMicros: 0 })
      expect((yield* adminFails("task", "resolve", "--task", failed, "--outcome", "failed", "--reason", "again")).reason).toBe(
        "TaskNotResolvable"
      )
    })
  )

  it.effect("payments list, events --unapplied and reconcile, on a server without a payment processor", () =>
    Effect.gen(function* () {
      const url = yield* baseUrl
      const { account } = yield* admin("account", "create", "--name", "payer")
      expect(yield* admin("payments", "list", "--account", account.id)).toEqual([])
      const human = yield* run(["admin", "--url", url, "payments", "events", "--unapplied"], {
        TASKMETER_ADMIN_TOKEN: Redacted.value(token)
      })
      expect(human).toMatchObject({ code: 0, stdout: "Every payment event received is applied.\n" })
      const refused = yield* adminFails("payments", "reconcile", "--from", "2030-01-01", "--to", "2030-01-02")
      expect(refused).toEqual({ reason: "PaymentsNotConfigured", message: expect.stringContaining("STRIPE_SECRET_KEY") })
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
