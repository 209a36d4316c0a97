/**
 * SSE_MAX_STREAMS_PER_ACCOUNT across processes, as deployed: two `taskmeter start` processes on one
 * PostgreSQL schema share an account's event-stream limit (TaskStore.holdStream); a closed stream
 * gives its slot back at once; the slots of a process killed with SIGKILL still count until their
 * lease (SSE_STREAM_LEASE_SECONDS) runs out, then come back.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Redacted } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { afterAll, vi } from "vitest"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Dependencies from "../../../test/Dependencies.ts"
import * as Reader from "./support/EventStreamReader.ts"
import { databaseUrl, dropSchema, schemaName } from "./support/stores.ts"
import * as TaskmeterProcess from "./support/TaskmeterProcess.ts"

vi.setConfig({ testTimeout: 180_000 })

const schema = schemaName("streams")
const token = Redacted.value(OperatorToken.generate())
const LIMIT = 3
const LEASE_SECONDS = 2

const env = {
  ...Dependencies.childEnv,
  DATABASE_URL: databaseUrl,
  DATABASE_SCHEMA: schema,
  OPERATOR_TOKEN: token,
  PORT: "0",
  HOST: "127.0.0.1",
  ADMIN_PORT: "0",
  DATA_DIR: mkdtempSync(join(tmpdir(), "taskmeter-streams-")),
  SIMULATED_ENABLED: "true",
  WORKERS: "false",
  SSE_HEARTBEAT_SECONDS: "1",
  SSE_MAX_STREAMS_PER_ACCOUNT: String(LIMIT),
  SSE_STREAM_LEASE_SECONDS: String(LEASE_SECONDS)
}

const MODEL = "alpha-2-lite-text-to-image-economy"

describe("SSE_MAX_STREAMS_PER_ACCOUNT across server processes on PostgreSQL", () => {
  afterAll(() => Effect.runPromise(dropSchema(schema)))

  it.live("holds across two servers; a closed stream frees its slot; a killed server's slots come back after the lease", () =>
    Effect.gen(function* () {
      const a = yield* TaskmeterProcess.launch("start", TaskmeterProcess.SERVER_READY, env)
      const b = yield* TaskmeterProcess.launch("start", TaskmeterProcess.SERVER_READY, env)
      const created = yield* TaskmeterProcess.admin(a.adminUrl, token, "account", "create", "--credits-usd", "10")
      const auth = { authorization: `Bearer ${created.key.secret as string}` }
      const other = yield* TaskmeterProcess.admin(a.adminUrl, token, "account", "create", "--credits-usd", "10")
      const otherAuth = { authorization: `Bearer ${other.key.secret as string}` }
      const submit = (headers: Record<string, string>, name: string) =>
        Effect.promise(async () => {
          const response = await fetch(`${a.url}/api/v1/jobs`, {
            method: "POST",
            headers: { ...headers, "content-type": "application/json", "idempotency-key": name },
            body: JSON.stringify({ model: MODEL, input: { prompt: name } })
          })
          expect(response.status).toBe(202)
          return ((await response.json()) as { readonly id: string }).id
        })
      // No worker runs: the tasks stay queued and their streams stay open.
      const id = yield* submit(auth, "followed")
      const theirs = yield* submit(otherAuth, "theirs")
      const follow = (server: TaskmeterProcess.Launched, task = id, headers = auth) =>
        Effect.promise(async () => {
          const stream = await Reader.open(`${server.url}/api/v1/jobs/${task}/events`, headers)
          if (stream.status === 200) expect(await stream.next()).toMatchObject({ id: "1", event: "status" })
          return stream
        })
      /** A stream opened past the limit: its status and error code. */
      const rawRefused = async (server: TaskmeterProcess.Launched) => {
        const controller = new AbortController()
        const response = await fetch(`${server.url}/api/v1/jobs/${id}/events`, { headers: auth, signal: controller.signal })
        if (response.status === 200) {
          controller.abort()
          return [200]
        }
        const body = (await response.json()) as { readonly code?: string }
        return [response.status, body.code]
      }

      const onA = [yield* follow(a), yield* follow(a)]
      const onB = [yield* follow(b)]
      expect([...onA, ...onB].map((stream) => stream.status)).toEqual([200, 200, 200])
      // The account's fourth stream is refused on either server; another account's is not.
      expect(yield* Effect.promise(() => rawRefused(b))).toEqual([429, "CONCURRENCY_LIMITED"])
      expect(yield* Effect.promise(() => rawRefused(a))).toEqual([429, "CONCURRENCY_LIMITED"])
      const others = yield* follow(b, theirs, otherAuth)
      expect(others.status).toBe(200)

      // A stream closed on A frees its slot for B (once A has seen the client go).
      onA.pop()?.close()
      const reopened = yield* Effect.promise(async () => {
        for (let tries = 0; tries < 100; tries++) {
          const stream = await Reader.open(`${b.url}/api/v1/jobs/${id}/events`, auth)
          if (stream.status === 200) return stream
          await stream.rest()
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        throw new Error("the closed stream's slot never came back")
      })
      onB.push(reopened)

      // B dies without closing anything: its two streams still count until their lease runs out.
      const killed = Date.now()
      yield* Effect.promise(() => new Promise((resolve) => b.child.once("exit", resolve).kill("SIGKILL")))
      expect(yield* Effect.promise(() => rawRefused(a))).toEqual([429, "CONCURRENCY_LIMITED"])
      // Opens a stream on A as soon as one of B's slots has lapsed (each lapses on its own lease).
      const whenFree = () =>
        Effect.promise(async () => {
          for (;;) {
            const stream = await Reader.open(`${a.url}/api/v1/jobs/${id}/events`, auth)
            if (stream.status === 200) return stream
            await stream.rest()
            if (Date.now() - killed > 20_000) throw new Error("the killed server's slots never came back")
            await new Promise((resolve) => setTimeout(resolve, 100))
          }
        })
      const back = yield* whenFree()
      // Renewed every third of the lease: the last renewal was at most that long before the kill.
      expect(Date.now() - killed).toBeGreaterThanOrEqual((LEASE_SECONDS * 1000 * 2) / 3 - 100)
      // Both of B's slots come back, and no more: A then holds the account's three.
      const third = yield* whenFree()
      expect([back.status, third.status]).toEqual([200, 200])
      expect(yield* Effect.promise(() => rawRefused(a))).toEqual([429, "CONCURRENCY_LIMITED"])
      for (const stream of [...onA, ...onB, back, third, others]) stream.close()
    }).pipe(Effect.scoped)
  )
})
