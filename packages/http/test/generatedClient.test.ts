/**
 * Clients generated from the served OpenAPI document, as a customer would make them, over GET
 * /api/openapi.json of the composed server (simulated provider): openapi-typescript at its default
 * settings used through openapi-fetch, and @hey-api/openapi-ts at its defaults (its fetch client)
 * but for `.ts` import extensions, so Node runs the generated files as they are. Each program is
 * type-checked by the repo's tsc, then run against that server: submit, replay with the same
 * Idempotency-Key, poll until terminal, download the file; both print the same outcome.
 * (@hey-api/openapi-ts drives TypeScript 5's JS API: the root package.json overrides its
 * typescript to 5.x, nested under packages/http, since the repo's tsc 7 has none.)
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
import { createClient } from "@hey-api/openapi-ts"
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
const clientsDir = mkdtempSync(join(tmpdir(), "taskmeter-generated-client-"))
afterAll(() => {
  rmSync(clientsDir, { recursive: true, force: true })
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
 * The customer's program over openapi-typescript, checked with the repo's strict settings. The annotated constants are
 * what generated types got wrong before: an input field with a default must be optional, a task's
 * errorCode always present (string or null), a model's inputSchema an open object.
 */
const OPENAPI_TYPESCRIPT_PROGRAM = `import createClient from "openapi-fetch"
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
if (first.data === undefined || again.data === undefined) throw new Error(\`submit answered \${first.response?.status}\`)

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

/** The same program over the SDK @hey-api/openapi-ts generates, with the same annotated constants. */
const HEY_API_PROGRAM = `import { client } from "./client/client.gen.ts"
import { catalogModels, jobsCreate, jobsGet, resultsDownload } from "./client/index.ts"
import type { Model, Task } from "./client/index.ts"

const [baseUrl, key] = process.argv.slice(2) as [string, string]
client.setConfig({ baseUrl, headers: { authorization: \`Bearer \${key}\` } })

const models = await catalogModels()
if (models.data === undefined) throw new Error(\`GET /api/v1/models answered \${models.response?.status}\`)
const inputSchema: Model["inputSchema"] = { type: "object", properties: {} }

const submit = (idempotencyKey: string) =>
  jobsCreate({
    headers: { "idempotency-key": idempotencyKey },
    body: { model: "${IMAGE_MODEL}", input: { prompt: "a lighthouse at dusk" } }
  })
const idempotencyKey = crypto.randomUUID()
const first = await submit(idempotencyKey)
const again = await submit(idempotencyKey)
if (first.data === undefined || again.data === undefined) throw new Error(\`submit answered \${first.response?.status}\`)

let task: Task = first.data
const terminal: ReadonlyArray<Task["status"]> = ["succeeded", "failed", "reconciliation_required"]
for (let polls = 0; !terminal.includes(task.status) && polls < 400; polls++) {
  await new Promise((done) => setTimeout(done, 25))
  const polled = await jobsGet({ path: { id: task.id } })
  if (polled.data === undefined) throw new Error(\`poll answered \${polled.response?.status}: \${polled.error?.code}\`)
  task = polled.data
}
const errorCode: string | null = task.errorCode
const url = task.assets[0]?.url
if (url === undefined) throw new Error(\`task \${task.status} \${errorCode} has no file\`)
const file = await resultsDownload({ path: { id: url.slice("/api/v1/results/".length) } })
if (file.data === undefined) throw new Error(\`download answered \${file.response?.status}\`)
const bytes = new Uint8Array(await file.data.arrayBuffer())

console.log(JSON.stringify({
  models: models.data.models.length,
  inputSchema,
  submitted: { status: first.response?.status, replayed: first.data.replayed },
  replay: { status: again.response?.status, replayed: again.data.replayed, id: again.data.id === first.data.id },
  task: { status: task.status, errorCode, priceMicros: task.priceMicros },
  file: { type: file.response?.headers.get("content-type"), bytes: bytes.subarray(0, 8).join(",") }
}))
`

const TSCONFIG = {
  extends: join(REPO, "tsconfig.base.json"),
  compilerOptions: { lib: ["es2024", "dom"], types: ["node"] },
  files: ["program.ts"]
}

const run = (cwd: string, file: string, args: ReadonlyArray<string>) =>
  Effect.promise(() =>
    promisify(execFile)(process.execPath, [file, ...args], { cwd, env: Dependencies.childEnv }).catch(
      (failure: { stdout?: string; stderr?: string; message: string }) => ({
        stdout: "",
        stderr: `${failure.message}\n${failure.stdout ?? ""}\n${failure.stderr ?? ""}`
      })
    )
  )

/** The served document, checked to name the server it came from. */
const servedDocument = Effect.gen(function* () {
  const base = HttpServer.formatAddress((yield* HttpServer.HttpServer).address)
  const document: any = yield* Effect.promise(() => fetch(`${base}/api/openapi.json`).then((response) => response.json()))
  expect(document.servers).toEqual([{ url: base }])
  return document
})

/**
 * A fresh folder for one client: its program, the repo's strict tsconfig (`compilerOptions` on
 * top), and node_modules linking `packages` of the repo's.
 */
const clientFolder = (
  name: string,
  program: string,
  packages: ReadonlyArray<string>,
  compilerOptions: Record<string, unknown> = {}
): string => {
  const dir = join(clientsDir, name)
  mkdirSync(join(dir, "node_modules"), { recursive: true })
  writeFileSync(join(dir, "program.ts"), program)
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({ ...TSCONFIG, compilerOptions: { ...TSCONFIG.compilerOptions, ...compilerOptions } })
  )
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", private: true }))
  for (const name of ["@types", ...packages]) symlinkSync(join(REPO, "node_modules", name), join(dir, "node_modules", name))
  return dir
}

/**
 * Type-checks the client's program with the repo's tsc, runs it against the server with a new
 * account's key, and checks what it did: submitted once, replayed, polled to success, downloaded
 * the PNG, and was charged once (the replay reserved nothing).
 */
const checkAndRun = (dir: string, baseUrl: string) =>
  Effect.gen(function* () {
    const checked = yield* run(dir, join(REPO, "node_modules", "typescript", "bin", "tsc"), ["-p", join(dir, "tsconfig.json")])
    expect(checked.stderr + checked.stdout).toBe("")

    const { account, key } = yield* Accounts.Accounts.use((accounts) =>
      accounts.create({ name: "generated-client", credits: Money.micros(5_000_000) })
    )
    const ran = yield* run(dir, join(dir, "program.ts"), [baseUrl, key.secret])
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
    const { priceMicros } = JSON.parse(ran.stdout).task
    expect(priceMicros).toBeGreaterThan(0)
    expect(yield* Ledger.Ledger.use((ledger) => ledger.balances(account.id))).toMatchObject({
      balanceMicros: 5_000_000 - priceMicros,
      reservedMicros: 0
    })
  })

layer(TestServer, { excludeTestServices: true })("clients generated from the OpenAPI document", (it) => {
  it.effect(
    "openapi-typescript: type-checks at its default settings and submits, replays, polls and downloads through openapi-fetch",
    () =>
      Effect.gen(function* () {
        const document = yield* servedDocument
        // The reference page may send its test requests there too.
        const docs = yield* Effect.promise(() => fetch(`${document.servers[0].url}/docs`))
        expect(docs.headers.get("content-security-policy")).toContain(`connect-src 'self' ${document.servers[0].url};`)

        const dir = clientFolder("openapi-typescript", OPENAPI_TYPESCRIPT_PROGRAM, [
          "openapi-fetch",
          "openapi-typescript-helpers"
        ])
        writeFileSync(join(dir, "schema.ts"), astToString(yield* Effect.promise(() => openapiTS(document))))
        yield* checkAndRun(dir, document.servers[0].url)
      }),
    60_000
  )

  it.effect(
    "@hey-api/openapi-ts: its fetch SDK type-checks and submits, replays, polls and downloads",
    () =>
      Effect.gen(function* () {
        const document = yield* servedDocument
        // The fetch client it copies into the output (client/, core/) is not written for
        // exactOptionalPropertyTypes (it passes `undefined` to optional members); the types it
        // generates from the document (types.gen.ts, sdk.gen.ts) check under it.
        const dir = clientFolder("hey-api", HEY_API_PROGRAM, [], { exactOptionalPropertyTypes: false })
        yield* Effect.promise(() =>
          createClient({
            input: document,
            output: { path: join(dir, "client"), importFileExtension: ".ts" },
            logs: { level: "silent" }
          })
        )
        yield* checkAndRun(dir, document.servers[0].url)
      }),
    60_000
  )
})
