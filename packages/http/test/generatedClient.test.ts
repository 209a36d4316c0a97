/**
 * A client generated from the served OpenAPI document, as a customer would make one: openapi-typescript
 * at its default settings over GET /api/openapi.json of the composed server (simulated provider),
 * type-checked by the repo's tsc with a program that uses it through openapi-fetch, then run against
 * that server: submit, replay with the same Idempotency-Key, poll until terminal, download the file.
 */
import { execFile } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { promisify } from "node:util"
import { afterAll, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import openapiTS, { astToString } from "openapi-typescript"
import { Accounts, Ledger, Money } from "@taskmeter/kernel"
import { OAuthStore } from "@taskmeter/mcp"
import { Simulated } from "@taskmeter/providers"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as Dependencies from "../../../test/Dependencies.ts"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Main from "../src/main.ts"
import * as ServerConfig from "../src/ServerConfig.ts"

const REPO = resolve(import.meta.dirname, "../../..")
const IMAGE_MODEL = "alpha-2-lite-text-to-image-economy"
const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-client-"))
const clientDir = mkdtempSync(join(tmpdir(), "taskmeter-generated-client-"))
afterAll(() => {
  rmSync(clientDir, { recursive: true, force: true })
  rmSync(dataDir, { recursive: true, force: true })
})

const TestServer = Main.server({
  settings: { ...Main.defaults, accessLog: false },
  adapters: [Simulated.make({ models: [IMAGE_MODEL] })],
  pricesFile: Main.pricesFileOf(dataDir),
  token: OperatorToken.generate(),
  dataDir
}).pipe(
  Layer.provideMerge(Layer.merge(MemoryStore.layer, OAuthStore.layerMemory)),
  Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminPort: 0 }))
)

/**
 * The customer's program, checked with the repo's strict settings. The annotated constants are
 * what generated types got wrong before: an input field with a default must be optional, a task's
 * errorCode always present (string or null), a model's inputSchema an open object.
 */
const PROGRAM = `import createClient from "openapi-fetch"
import type { components, paths } from "./schema.ts"

type Task = components["schemas"]["Task"]
const [baseUrl, key] = process.argv.slice(2) as [string, string]
const client = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${key}\` } })

const models = await client.GET("/api/v1/models")
if (models.data === undefined) throw new Error(\`GET /api/v1/models answered \${models.response.status}\`)
const inputSchema: components["schemas"]["Model"]["inputSchema"] = { type: "object", properties: {} }

const submit = (idempotencyKey: string) =>
  client.POST("/api/v1/jobs", {
    params: { header: { "idempotency-key": idempotencyKey } },
    body: { model: "${IMAGE_MODEL}", input: { prompt: "a lighthouse at dusk" } }
  })
const idempotencyKey = crypto.randomUUID()
const first = await submit(idempotencyKey)
const again = await submit(idempotencyKey)
if (first.data === undefined || again.data === undefined) throw new Error(\`submit answered \${first.response.status}\`)

let task: Task = first.data
const terminal: ReadonlyArray<Task["status"]> = ["succeeded", "failed", "reconciliation_required"]
for (let polls = 0; !terminal.includes(task.status) && polls < 400; polls++) {
  await new Promise((done) => setTimeout(done, 25))
  const polled = await client.GET("/api/v1/jobs/{id}", { params: { path: { id: task.id } } })
  if (polled.data === undefined) throw new Error(\`poll answered \${polled.response.status}: \${polled.error?.code}\`)
  task = polled.data
}
const errorCode: string | null = task.errorCode
const url = task.assets[0]?.url
if (url === undefined) throw new Error(\`task \${task.status} \${errorCode} has no file\`)
const file = await client.GET("/api/v1/results/{id}", {
  params: { path: { id: url.slice("/api/v1/results/".length) } },
  parseAs: "arrayBuffer"
})
if (file.data === undefined) throw new Error(\`download answered \${file.response.status}\`)

console.log(JSON.stringify({
  models: models.data.models.length,
  inputSchema,
  submitted: { status: first.response.status, replayed: first.data.replayed },
  replay: { status: again.response.status, replayed: again.data.replayed, id: again.data.id === first.data.id },
  task: { status: task.status, errorCode, priceMicros: task.priceMicros },
  file: { type: file.response.headers.get("content-type"), bytes: new Uint8Array(file.data).subarray(0, 8).join(",") }
}))
`

const TSCONFIG = {
  extends: join(REPO, "tsconfig.base.json"),
  compilerOptions: { lib: ["es2024", "dom"], types: ["node"] },
  files: ["program.ts"]
}

const run = (file: string, args: ReadonlyArray<string>) =>
  Effect.promise(() =>
    promisify(execFile)(process.execPath, [file, ...args], { cwd: clientDir, env: Dependencies.childEnv }).catch(
      (failure: { stdout?: string; stderr?: string; message: string }) => ({
        stdout: "",
        stderr: `${failure.message}\n${failure.stdout ?? ""}\n${failure.stderr ?? ""}`
      })
    )
  )

layer(TestServer, { excludeTestServices: true })("a client generated with openapi-typescript", (it) => {
  it.effect(
    "type-checks at its default settings and submits, replays, polls and downloads through openapi-fetch",
    () =>
      Effect.gen(function* () {
        const base = HttpServer.formatAddress((yield* HttpServer.HttpServer).address)
        const document: any = yield* Effect.promise(() => fetch(`${base}/api/openapi.json`).then((response) => response.json()))
        expect(document.servers).toEqual([{ url: base }])
        // The reference page may send its test requests there too.
        const docs = yield* Effect.promise(() => fetch(`${base}/docs`))
        expect(docs.headers.get("content-security-policy")).toContain(`connect-src 'self' ${base};`)

        const schema = astToString(yield* Effect.promise(() => openapiTS(document)))
        writeFileSync(join(clientDir, "schema.ts"), schema)
        writeFileSync(join(clientDir, "program.ts"), PROGRAM)
        writeFileSync(join(clientDir, "tsconfig.json"), JSON.stringify(TSCONFIG))
        writeFileSync(join(clientDir, "package.json"), JSON.stringify({ type: "module", private: true }))
        mkdirSync(join(clientDir, "node_modules"))
        symlinkSync(join(REPO, "node_modules", "openapi-fetch"), join(clientDir, "node_modules", "openapi-fetch"))
        symlinkSync(
          join(REPO, "node_modules", "openapi-typescript-helpers"),
          join(clientDir, "node_modules", "openapi-typescript-helpers")
        )
        symlinkSync(join(REPO, "node_modules", "@types"), join(clientDir, "node_modules", "@types"))

        const checked = yield* run(join(REPO, "node_modules", "typescript", "bin", "tsc"), [
          "-p",
          join(clientDir, "tsconfig.json")
        ])
        expect(checked.stderr + checked.stdout).toBe("")

        const { account, key } = yield* Accounts.Accounts.use((accounts) =>
          accounts.create({ name: "generated-client", credits: Money.micros(5_000_000) })
        )
        const ran = yield* run(join(clientDir, "program.ts"), [document.servers[0].url, key.secret])
        expect(ran.stderr).toBe("")
        expect(JSON.parse(ran.stdout)).toEqual({
          models: 33,
          inputSchema: { type: "object", properties: {} },
          submitted: { status: 202, replayed: false },
          replay: { status: 200, replayed: true, id: true },
          task: { status: "succeeded", errorCode: null, priceMicros: expect.any(Number) },
          // The PNG signature.
          file: { type: "image/png", bytes: "137,80,78,71,13,10,26,10" }
        })
        // Charged once: the replay reserved nothing.
        const { priceMicros } = JSON.parse(ran.stdout).task
        expect(priceMicros).toBeGreaterThan(0)
        expect(yield* Ledger.Ledger.use((ledger) => ledger.balances(account.id))).toMatchObject({
          balanceMicros: 5_000_000 - priceMicros,
          reservedMicros: 0
        })
      }),
    60_000
  )
})
