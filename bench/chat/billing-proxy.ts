/**
 * The benchmark's second floor (`run.ts --proxy billing-proxy.ts`): the least any billing chat proxy
 * does per request, in plain node:http with no framework, in a process of its own. It hashes the
 * bearer key and finds its account in memory, parses the body, counts the prompt's tokens with the
 * same tokenizer as the kernel, reserves against a balance in memory, forwards the body with
 * `stream_options.include_usage` on a keep-alive Agent, reads the usage (a JSON answer parsed and
 * written again with the charge; a stream passed through as it comes, its usage event parsed),
 * releases what was not charged, and settles: one row per request, written to PostgreSQL in a
 * multi-row INSERT every 50 ms with STORE=pg (a table of its own, dropped at the end), with a JSON
 * access line per request to stdout in the same batches. What it adds over `proxy.ts` is the work,
 * without taskmeter's layers. Prints its base URL on stdout.
 */
import { createHash, randomUUID } from "node:crypto"
import { once } from "node:events"
import { Agent, createServer, request } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { countTokens } from "gpt-tokenizer/encoding/o200k_base"
import { PgStore } from "@taskmeter/storage-pg"

const upstream = new URL(`${process.env.UPSTREAM_URL!}/chat/completions`)
const agent = new Agent({ keepAlive: true, maxSockets: 128 })
const MICROS_PER_TOKEN = 1
const FLUSH_MS = 50

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")
// A key's account comes into being funded the first time the key is seen: the floor has no account
// store, only the lookup by the key's hash that every request pays.
const accounts = new Map<string, { available: number }>()
const accountOf = (key: string) => {
  const hash = sha256(key)
  let account = accounts.get(hash)
  if (account === undefined) accounts.set(hash, (account = { available: Number.MAX_SAFE_INTEGER }))
  return account
}

const table = `bench_billing_floor_${randomUUID().replaceAll("-", "").slice(0, 12)}`
const database =
  process.env.STORE === "pg"
    ? ManagedRuntime.make(
        PgStore.client({
          url: process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test",
          maxConnections: 1
        })
      )
    : undefined
const onDatabase = (statement: string, params: ReadonlyArray<unknown> = []) =>
  database!.runPromise(SqlClient.SqlClient.use((sql) => sql.unsafe(statement, params).pipe(Effect.asVoid)))
if (database !== undefined)
  await onDatabase(`CREATE UNLOGGED TABLE ${table} (request_id uuid PRIMARY KEY, account text NOT NULL, micros bigint NOT NULL)`)

let settlements: Array<[string, string, number]> = []
let accessLines = ""
setInterval(() => {
  if (accessLines !== "") process.stdout.write(accessLines)
  accessLines = ""
  if (settlements.length === 0 || database === undefined) return
  const batch = settlements
  settlements = []
  const rows = batch.map((_, i) => `($${3 * i + 1}::uuid, $${3 * i + 2}, $${3 * i + 3})`).join(", ")
  void onDatabase(`INSERT INTO ${table} (request_id, account, micros) VALUES ${rows}`, batch.flat())
}, FLUSH_MS).unref()

const settle = (account: { available: number }, requestId: string, reserved: number, charged: number, started: number) => {
  account.available += reserved - Math.min(charged, reserved)
  settlements.push([requestId, "bench", Math.min(charged, reserved)])
  accessLines += `${JSON.stringify({ at: new Date().toISOString(), id: requestId, path: "/chat/completions", status: 200, ms: performance.now() - started })}\n`
}

const server = createServer((incoming, outgoing) => {
  const started = performance.now()
  const account = accountOf((incoming.headers.authorization ?? "").slice("Bearer ".length))
  const chunks: Array<Buffer> = []
  incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
  incoming.on("end", () => {
    const body = JSON.parse(Buffer.concat(chunks).toString()) as {
      stream?: boolean
      max_tokens?: number
      messages: ReadonlyArray<{ content: string }>
    }
    const promptTokens = countTokens(body.messages.map((message) => message.content).join("\n"))
    const reserved = (promptTokens + (body.max_tokens ?? 4096)) * MICROS_PER_TOKEN
    if (account.available < reserved) return void outgoing.writeHead(409).end()
    account.available -= reserved
    const requestId = randomUUID()
    const forwarded = JSON.stringify(body.stream === true ? { ...body, stream_options: { include_usage: true } } : body)
    const call = request(
      upstream,
      {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(forwarded) }
      },
      (answer) => {
        if (body.stream === true) {
          outgoing.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", "x-request-id": requestId })
          answer.on("data", (chunk: Buffer) => {
            const text = chunk.toString()
            const usageAt = text.indexOf('"usage"')
            if (usageAt !== -1) {
              const event = text.slice(text.lastIndexOf("data: ", usageAt) + 6, text.indexOf("\n\n", usageAt))
              const usage = (JSON.parse(event) as { usage: { total_tokens: number } }).usage
              settle(account, requestId, reserved, usage.total_tokens * MICROS_PER_TOKEN, started)
            }
            outgoing.write(chunk)
          })
          answer.on("end", () => outgoing.end())
          return
        }
        const parts: Array<Buffer> = []
        answer.on("data", (chunk: Buffer) => parts.push(chunk))
        answer.on("end", () => {
          const completion = JSON.parse(Buffer.concat(parts).toString()) as { usage: { total_tokens: number } }
          const charged = completion.usage.total_tokens * MICROS_PER_TOKEN
          settle(account, requestId, reserved, charged, started)
          const whole = JSON.stringify({ ...completion, svc: { charged_micros: Math.min(charged, reserved) } })
          outgoing.writeHead(200, {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(whole),
            "x-request-id": requestId
          })
          outgoing.end(whole)
        })
      }
    )
    call.on("error", (error) => {
      account.available += reserved
      outgoing.writeHead(502).end(String(error))
    })
    call.end(forwarded)
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, "127.0.0.1")
await once(server, "listening")
console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`)

process.once("SIGTERM", async () => {
  server.close()
  if (database !== undefined) {
    await onDatabase(`DROP TABLE IF EXISTS ${table}`)
    await database.dispose()
  }
  process.exit(0)
})
