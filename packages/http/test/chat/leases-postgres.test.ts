/**
 * Chat credit leases across `taskmeter start` processes on one PostgreSQL (a fresh schema of
 * TEST_DATABASE_URL), chat on the offline model, slowed (a second a token, so every answer outlasts
 * the spread of 200 admissions on a loaded machine) so that requests overlap: 200 parallel
 * requests over two servers on an account that covers exactly 50 get exactly 50 through; a server
 * killed (SIGKILL) with a lease open loses only its unwritten charges, and another server's sweep
 * returns the lease's credit after it expires, the books balanced.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Redacted } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { afterAll, vi } from "vitest"
import { ChatPrices, ChatTokens, Money } from "@taskmeter/kernel"
import defaultChatPrices from "@taskmeter/kernel/prices/default-chat-prices.json" with { type: "json" }
import * as OperatorToken from "../../src/admin/OperatorToken.ts"
import * as Dependencies from "../../../../test/Dependencies.ts"
import { databaseUrl, dropSchema, schemaName } from "../support/stores.ts"

vi.setConfig({ testTimeout: 240_000 })

const BIN = fileURLToPath(new URL("../../bin/taskmeter.ts", import.meta.url))
const schema = schemaName("test")
const token = Redacted.value(OperatorToken.generate())
/** The kill test's lease life, short so that its sweep comes soon. */
const SHORT_LEASE_TTL_SECONDS = 2

const env = {
  ...Dependencies.childEnv,
  DATABASE_URL: databaseUrl,
  DATABASE_SCHEMA: schema,
  OPERATOR_TOKEN: token,
  PORT: "0",
  HOST: "127.0.0.1",
  ADMIN_PORT: "0",
  DATA_DIR: mkdtempSync(join(tmpdir(), "taskmeter-chat-leases-")),
  WORKERS: "false",
  CHAT_LOCAL_TOKEN_DELAY_MS: "1000",
  CHAT_REQUESTS_PER_MINUTE: "100000",
  CHAT_MAX_OPEN_REQUESTS: "100000",
  KEY_RATE_LIMIT_PER_MINUTE: "100000"
}

interface Server {
  readonly url: string
  readonly adminUrl: string
  readonly child: ChildProcess
}

/**
 * `taskmeter start` with leases of `leaseTtlSeconds` (default 30 s), stopped (SIGTERM) when the
 * scope closes unless it was killed before.
 */
const startServer = (leaseTtlSeconds?: number) =>
  Effect.acquireRelease(
    Effect.callback<Server, Error>((resume) => {
      const child = spawn(process.execPath, [BIN, "start"], {
        env: leaseTtlSeconds === undefined ? env : { ...env, CHAT_LEASE_TTL_SECONDS: String(leaseTtlSeconds) },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      const ready = /taskmeter is listening on (\S+)[\s\S]*\n {2}admin +(\S+)\/admin\/rpc /
      const onData = (chunk: Buffer) => {
        output += chunk.toString()
        const match = ready.exec(output)
        if (match !== null) resume(Effect.succeed({ url: match[1]!, adminUrl: match[2]!, child }))
      }
      child.stdout.on("data", onData)
      child.stderr.on("data", onData)
      child.once("exit", (code) => resume(Effect.fail(new Error(`taskmeter start exited ${code}:\n${output}`))))
    }),
    ({ child }) =>
      Effect.callback<void>((resume) => {
        if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
        child.once("exit", () => resume(Effect.void))
        child.kill("SIGTERM")
      })
  )

const admin = (url: string, ...args: ReadonlyArray<string>) =>
  Effect.callback<any>((resume) => {
    execFile(
      process.execPath,
      [BIN, "admin", "--url", url, "--token", token, "--json", ...args],
      { env: Dependencies.childEnv, timeout: 30_000 },
      (error, stdout, stderr) =>
        resume(error === null ? Effect.succeed(JSON.parse(stdout)) : Effect.die(new Error(`${error.message}\n${stderr}`)))
    )
  })

const MESSAGES = [{ role: "user", content: "Name three lighthouses." }]
const MAX_TOKENS = 1000

/** A streamed completion read to its end (or to its first piece, `stopAfterFirst`): status, code, charge. */
const chat = (server: Server, key: string, stopAfterFirst = false) =>
  Effect.promise(async () => {
    const controller = new AbortController()
    const response = await fetch(`${server.url}/api/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "taskmeter-local", messages: MESSAGES, max_tokens: MAX_TOKENS, stream: true }),
      signal: controller.signal
    })
    if (!response.ok) return { status: response.status, code: ((await response.json()) as any).code as string, charged: 0 }
    let text = ""
    const decoder = new TextDecoder()
    for await (const bytes of response.body!) {
      text += decoder.decode(bytes, { stream: true })
      if (stopAfterFirst && text.includes('"content"')) return { status: response.status, code: "", charged: 0, text }
    }
    const charged = /"charged_micros":(\d+)/.exec(text)?.[1]
    return { status: response.status, code: "", charged: Number(charged ?? Number.NaN) }
  })

const usage = (server: Server, key: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${server.url}/api/v1/usage?limit=1`, { headers: { authorization: `Bearer ${key}` } })
    return (await response.json()) as { balanceMicros: number; reservedMicros: number }
  })

/** Polls the usage until nothing is reserved (or 15 s pass). */
const released = (server: Server, key: string) =>
  Effect.gen(function* () {
    const deadline = Date.now() + 15_000
    for (;;) {
      const now = yield* usage(server, key)
      if (now.reservedMicros === 0 || Date.now() > deadline) return now
      yield* Effect.sleep("100 millis")
    }
  })

const newCustomer = (server: Server, credits: number) =>
  Effect.map(
    admin(server.adminUrl, "account", "create", "--credits-usd", Money.formatUsd(credits)),
    (created) => created.key.secret as string
  )

describe("chat credit leases across server processes on one PostgreSQL", () => {
  afterAll(() => Effect.runPromise(dropSchema(schema)))

  const tiers = defaultChatPrices.models["taskmeter-local"].tiers as unknown as ReadonlyArray<ChatPrices.ChatPriceTier>
  const reserved = ChatPrices.cost(tiers, {
    promptTokens: ChatTokens.estimatePrompt("o200k_base", MESSAGES),
    completionTokens: MAX_TOKENS
  })

  it.live("200 parallel requests over two servers, credit for exactly 50: 50 served, 150 INSUFFICIENT_CREDITS", () =>
    Effect.gen(function* () {
      // One after the other: the first runs the migrations on the empty schema.
      // Leases of the default life: a loaded machine that delays a renewal past a short one would
      // have the other server sweep it, and its charges go unwritten (the operator's loss, by design).
      const a = yield* startServer()
      const b = yield* startServer()
      const credits = 50 * reserved
      const key = yield* newCustomer(a, credits)
      const results = yield* Effect.all(
        Array.from({ length: 200 }, (_, i) => chat(i % 2 === 0 ? a : b, key)),
        { concurrency: "unbounded" }
      )
      expect(results.filter((r) => r.status === 200)).toHaveLength(50)
      const refused = results.filter((r) => r.status !== 200)
      expect(refused.map((r) => [r.status, r.code])).toEqual(Array.from({ length: 150 }, () => [409, "INSUFFICIENT_CREDITS"]))
      const charged = results.reduce((sum, r) => sum + r.charged, 0)
      expect(charged).toBeGreaterThan(0)
      const after = yield* released(b, key)
      expect(after).toMatchObject({ reservedMicros: 0, balanceMicros: credits - charged })
      expect(yield* admin(b.adminUrl, "audit")).toEqual([])
    }).pipe(Effect.scoped)
  )

  it.live("a server killed with a lease open: its credit returns after expiry, nothing but unwritten charges lost", () =>
    Effect.gen(function* () {
      const survivor = yield* startServer(SHORT_LEASE_TTL_SECONDS)
      const doomed = yield* startServer(SHORT_LEASE_TTL_SECONDS)
      const credits = 1_000_000
      const key = yield* newCustomer(survivor, credits)
      const done = yield* Effect.all([chat(doomed, key), chat(doomed, key)], { concurrency: "unbounded" })
      const charged = done.reduce((sum, r) => sum + r.charged, 0)
      expect(done.map((r) => r.status)).toEqual([200, 200])
      // Its settled requests are written at once; one more request is in flight when it dies.
      yield* Effect.sleep("300 millis")
      const inFlight = yield* chat(doomed, key, true)
      expect(inFlight.status).toBe(200)
      doomed.child.kill("SIGKILL")
      const held = yield* usage(survivor, key)
      expect(held.reservedMicros).toBeGreaterThan(0)
      expect(held.balanceMicros).toBe(credits - charged)
      // The survivor sweeps the expired lease: everything returns but the written charges.
      const after = yield* released(survivor, key)
      expect(after).toMatchObject({ reservedMicros: 0, balanceMicros: credits - charged })
      expect(yield* admin(survivor.adminUrl, "audit")).toEqual([])
    }).pipe(Effect.scoped)
  )
})
