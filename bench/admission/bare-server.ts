/**
 * The admission benchmark's yardstick: a bare node:http handler (JSON.parse, the bearer key hashed)
 * handing each POST to storage-pg's TaskStore.admit of a key's request, the batched statement the
 * server's submissions become, answering 202 with the task's id; no framework or kernel, the quote
 * fixed at start. Started by run.ts with BARE_DATABASE_URL, BARE_SCHEMA and BARE_QUOTE (JSON);
 * prints `listening on http://...` once it listens. Why batched: bench/RESULTS.md, admission session 2.
 */
import { createHash } from "node:crypto"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect, ManagedRuntime, Redacted } from "effect"
import { Ids, Money, TaskStore } from "@taskmeter/kernel"
import { PgStore } from "@taskmeter/storage-pg"

const required = (name: string): string => {
  const value = process.env[name]
  if (value === undefined) throw new Error(`bench/admission/bare-server: ${name} is required`)
  return value
}

const NO_LIMIT = 1_000_000_000
const quote = JSON.parse(required("BARE_QUOTE")) as {
  readonly priceMicros: number
  readonly unitMicros: number
  readonly quantity: number
  readonly settlement: "fixed" | "perDeliveredUnit"
}

const runtime = ManagedRuntime.make(
  PgStore.layer({
    url: Redacted.make(required("BARE_DATABASE_URL")),
    schema: required("BARE_SCHEMA"),
    listen: false
  })
)
const tasks = await runtime.runPromise(
  Effect.gen(function* () {
    return yield* TaskStore.TaskStore
  })
)

const admit = (key: string, body: { readonly model: string; readonly input: unknown }, idempotencyKey: string) => {
  const now = Date.now()
  const id = Ids.makeTaskId()
  return runtime.runPromise(
    tasks.admit({
      key: {
        hash: createHash("sha256").update(key).digest("hex"),
        now: new Date(now),
        scope: "jobs:create",
        defaultRateLimitPerMinute: NO_LIMIT
      },
      task: {
        id,
        model: body.model,
        input: body.input as Record<string, unknown>,
        priceMicros: Money.micros(quote.priceMicros),
        unitMicros: Money.micros(quote.unitMicros),
        quantity: quote.quantity,
        settlement: quote.settlement,
        createdAt: new Date(now),
        deadlineAt: new Date(now + 600_000)
      },
      idempotencyKey,
      fingerprint: id,
      idempotencyExpiresAt: new Date(now + 86_400_000),
      limits: { submissionsPerMinute: NO_LIMIT, maxUnfinishedTasks: NO_LIMIT }
    })
  )
}

const server = createServer((request, response) => {
  const chunks: Array<Buffer> = []
  request.on("data", (chunk: Buffer) => chunks.push(chunk))
  request.on("end", () => {
    const fail = (error: unknown) => {
      response.writeHead(500, { "content-type": "text/plain" })
      response.end(String(error))
    }
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      const key = String(request.headers.authorization).replace(/^Bearer /, "")
      admit(key, body, String(request.headers["idempotency-key"])).then(({ admission }) => {
        if (admission?._tag !== "Admitted") return fail(`not admitted: ${admission?._tag ?? "the key was refused"}`)
        const answer = JSON.stringify({ id: admission.task.id, status: admission.task.status, replayed: false })
        response.writeHead(202, { "content-type": "application/json", "content-length": Buffer.byteLength(answer) })
        response.end(answer)
      }, fail)
    } catch (error) {
      fail(error)
    }
  })
})

server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo
  process.stdout.write(`bare admission server listening on http://127.0.0.1:${port}\n`)
})

process.once("SIGTERM", () => {
  server.close()
  server.closeAllConnections()
  void runtime.dispose().finally(() => process.exit(0))
})
