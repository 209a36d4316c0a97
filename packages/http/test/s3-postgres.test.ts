/**
 * Servers and a worker on different machines, as far as disks go: two `taskmeter start`
 * processes and one `taskmeter worker`, each with its own DATA_DIR, on one PostgreSQL schema and
 * one S3 bucket (a local s3rver). Media uploaded on one server serves a task submitted on the
 * other; the worker's result downloads from both; no blob file lands under any DATA_DIR. With
 * S3_PRESIGNED_DOWNLOADS a download is a 302 to S3, which serves the file and then expires. A bucket
 * that does not exist stops a server or worker at start with what to fix.
 */
import { mkdtempSync } from "node:fs"
import { readdir } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Redacted } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { afterAll, beforeAll, vi } from "vitest"
import { LocalS3 } from "@taskmeter/storage-s3/testing"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Dependencies from "../../../test/Dependencies.ts"
import { databaseUrl, dropSchema, schemaName } from "./support/stores.ts"
import { MEDIA_MODEL, PNG } from "./support/TestServer.ts"
import * as TaskmeterProcess from "./support/TaskmeterProcess.ts"

vi.setConfig({ testTimeout: 180_000 })

const schema = schemaName("s3")
const token = Redacted.value(OperatorToken.generate())
const dataDirs: Array<string> = []

let s3: LocalS3.LocalS3
beforeAll(async () => {
  s3 = await LocalS3.start({ prefix: "e2e" })
})
afterAll(async () => {
  await s3.close()
  await Effect.runPromise(dropSchema(schema))
})

/** `taskmeter <command>` with a DATA_DIR of its own; stopped (SIGTERM) when the scope closes. */
const launch = (command: "start" | "worker", ready: RegExp, extraEnv: Record<string, string> = {}) =>
  Effect.suspend(() => {
    const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-s3-"))
    dataDirs.push(dataDir)
    return TaskmeterProcess.launch(command, ready, {
      ...Dependencies.childEnv,
      ...s3.env,
      // Production's default keeps the simulator off where DATABASE_URL is set; these tasks run on it.
      SIMULATED_ENABLED: "true",
      DATABASE_URL: databaseUrl,
      DATABASE_SCHEMA: schema,
      OPERATOR_TOKEN: token,
      PORT: "0",
      HOST: "127.0.0.1",
      ADMIN_PORT: "0",
      DATA_DIR: dataDir,
      ...extraEnv
    })
  })

const startServer = (extraEnv: Record<string, string> = {}) =>
  launch("start", /taskmeter is listening on (\S+)[\s\S]*\n {2}admin +(\S+)\/admin\/rpc [\s\S]*\n {2}workers /, {
    WORKERS: "false",
    ...extraEnv
  })

const admin = (url: string, ...args: ReadonlyArray<string>) => TaskmeterProcess.admin(url, token, ...args)

const request = (url: string, key: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      redirect: "manual",
      ...init,
      headers: { authorization: `Bearer ${key}`, ...init.headers }
    })
    return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) }
  })

const json = (reply: { readonly bytes: Buffer }): any => JSON.parse(reply.bytes.toString("utf8"))

/** Uploads PNG on `upload`, submits the media model with it on `submit`; the task's id. */
const submitWithMedia = (upload: string, submit: string, key: string) =>
  Effect.gen(function* () {
    const uploaded = yield* request(`${upload}/api/v1/media`, key, {
      method: "POST",
      headers: { "content-type": "image/png" },
      body: PNG
    })
    expect(uploaded.status).toBe(201)
    const submitted = yield* request(`${submit}/api/v1/jobs`, key, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": crypto.randomUUID() },
      body: JSON.stringify({ model: MEDIA_MODEL, input: { prompt: "make it blue", imageUrls: [json(uploaded).reference] } })
    })
    expect(submitted.status).toBe(202)
    return json(submitted).id as string
  })

/** Polls the task until it is terminal. */
const settled = (url: string, key: string, id: string) =>
  Effect.gen(function* () {
    let task = json(yield* request(`${url}/api/v1/jobs/${id}`, key))
    for (let i = 0; i < 400 && !["succeeded", "failed", "reconciliation_required"].includes(task.status); i++) {
      yield* Effect.sleep("50 millis")
      task = json(yield* request(`${url}/api/v1/jobs/${id}`, key))
    }
    return task
  })

/** The files under `dir`/blobs. */
const blobFiles = (dir: string) =>
  Effect.promise(() => readdir(join(dir, "blobs"), { recursive: true }).catch(() => [] as Array<string>))

describe("servers and a worker sharing one S3 bucket and one PostgreSQL", () => {
  it.live("media uploaded on A feeds a task submitted on B, run by the worker; the result downloads from A and B", () =>
    Effect.gen(function* () {
      // One after the other: the first runs the migrations on the empty schema.
      const a = yield* startServer()
      const b = yield* startServer()
      expect(a.output()).toContain(`  blobs      S3 bucket ${s3.bucket} under e2e/ at ${s3.endpoint}: written and read at start`)
      const created = yield* admin(a.adminUrl, "account", "create", "--credits-usd", "5")
      const key: string = created.key.secret

      const id = yield* submitWithMedia(a.url, b.url, key)
      const worker = yield* launch("worker", /taskmeter worker: .*blobs in (S3 bucket)/, { PUBLIC_URL: a.url })
      const task = yield* settled(b.url, key, id)
      expect(task.status).toBe("succeeded")
      const path: string = task.assets[0].url

      const whole = yield* request(`${a.url}${path}`, key)
      expect(whole.status).toBe(200)
      expect(whole.headers.get("content-type")).toBe("image/png")
      expect((yield* request(`${b.url}${path}`, key)).bytes.equals(whole.bytes)).toBe(true)
      for (const server of [a, b]) {
        const ranged = yield* request(`${server.url}${path}`, key, { headers: { range: "bytes=8-99" } })
        expect(ranged.status).toBe(206)
        expect(ranged.headers.get("content-range")).toBe(`bytes 8-99/${whole.bytes.length}`)
        expect(ranged.bytes.equals(whole.bytes.subarray(8, 100))).toBe(true)
      }

      // Another account cannot reach it on either server.
      const other = (yield* admin(b.adminUrl, "account", "create", "--credits-usd", "1")).key.secret as string
      expect((yield* request(`${a.url}${path}`, other)).status).toBe(404)

      expect(worker.output()).toMatch(/blobs in S3 bucket/)
      expect(yield* Effect.forEach(dataDirs, blobFiles)).toEqual(dataDirs.map(() => []))
      expect((yield* Effect.promise(() => s3.objectKeys("e2e/"))).length).toBe(2)
    })
  )

  it.live("a server or worker whose bucket does not exist stops at start, saying what to fix", () =>
    Effect.gen(function* () {
      for (const command of ["start", "worker"] as const) {
        const failed = yield* Effect.flip(
          launch(command, /taskmeter (is listening|worker:)/, {
            S3_BUCKET: "no-such-bucket",
            PUBLIC_URL: "http://127.0.0.1:8787"
          })
        )
        expect(failed.message).toContain(`taskmeter ${command} exited 1`)
        expect(failed.message).toContain(
          `error: S3 bucket no-such-bucket under e2e/ at ${s3.endpoint} does not exist: create it, or fix S3_BUCKET, S3_ENDPOINT or S3_REGION.`
        )
      }
    })
  )

  it.live(
    "with S3_PRESIGNED_DOWNLOADS a download is a 302 to S3, which serves the file with its type and disposition, then expires",
    () =>
      Effect.gen(function* () {
        const server = yield* startServer({ WORKERS: "true", S3_PRESIGNED_DOWNLOADS: "true", RESULT_LINK_TTL_SECONDS: "2" })
        const key: string = (yield* admin(server.adminUrl, "account", "create", "--credits-usd", "5")).key.secret
        const id = yield* submitWithMedia(server.url, server.url, key)
        const task = yield* settled(server.url, key, id)
        expect(task.status).toBe("succeeded")
        const path: string = task.assets[0].url
        const resultId = path.split("/").pop()

        const redirect = yield* request(`${server.url}${path}`, key)
        expect(redirect.status).toBe(302)
        expect(redirect.headers.get("cache-control")).toBe("no-store")
        const location = redirect.headers.get("location")!
        expect(location.startsWith(`${s3.endpoint}/${s3.bucket}/e2e/`)).toBe(true)
        expect(new URL(location).searchParams.get("X-Amz-Expires")).toBe("2")

        const served = yield* Effect.promise(() => fetch(location))
        expect(served.status).toBe(200)
        expect(served.headers.get("content-type")).toBe("image/png")
        expect(served.headers.get("content-disposition")).toBe(`attachment; filename="result-${resultId}.png"`)
        expect((yield* Effect.promise(() => served.arrayBuffer())).byteLength).toBeGreaterThan(0)

        // Another account is refused before any URL is signed.
        const other = (yield* admin(server.adminUrl, "account", "create", "--credits-usd", "1")).key.secret as string
        expect((yield* request(`${server.url}${path}`, other)).status).toBe(404)

        yield* Effect.sleep("3 seconds")
        expect((yield* Effect.promise(() => fetch(location))).status).toBe(403)
      })
  )
})
