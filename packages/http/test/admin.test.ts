/**
 * The admin RPC service over real HTTP, on the composed server (storage-memory, no workers):
 * the operator-token guard, and every procedure through the typed client.
 */
import { createHash } from "node:crypto"
import { existsSync, mkdtempSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { describe, expect, it, layer } from "@effect/vitest"
import { AccountStore, Ids, type Money, PriceStore, Retention } from "@taskmeter/kernel"
import { OAuthStore, SignInCodes } from "@taskmeter/mcp"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as AdminClient from "../src/admin/AdminClient.ts"
import * as AdminFile from "../src/admin/AdminFile.ts"
import { AdminError } from "../src/admin/AdminRpc.ts"
import * as AdminServer from "../src/admin/AdminServer.ts"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Main from "../src/main.ts"
import * as ServerConfig from "../src/ServerConfig.ts"
import { HeldTask } from "@taskmeter/kernel/testing"
import { mcpSignIn } from "./adminSupport.ts"

const USD = 1_000_000
const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-admin-"))
const token = OperatorToken.generate()
const pricesFile = Main.pricesFileOf(dataDir)

const TestServer = Main.server({
  settings: { ...Main.defaults, workers: false },
  adapters: [],
  pricesFile,
  token,
  dataDir
}).pipe(
  Layer.provideMerge(Layer.merge(MemoryStore.layer, OAuthStore.layerMemory)),
  Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminPort: 0 }))
)

/** The public API's address. */
const apiUrl = Effect.map(HttpServer.HttpServer, (server) => HttpServer.formatAddress(server.address))
/** The admin listener's address. */
const baseUrl = Main.adminUrl

/** The admin client of the test server, with the given token. */
const withAdmin = <A, E>(
  f: (admin: AdminClient.AdminClient["Service"]) => Effect.Effect<A, E>,
  presented: Redacted.Redacted<string> = token
) =>
  Effect.flatMap(baseUrl, (url) =>
    AdminClient.AdminClient.use(f).pipe(Effect.provide(AdminClient.layer({ url, token: presented })))
  )

const reasonOf = <A, R>(effect: Effect.Effect<A, unknown, R>) =>
  Effect.map(Effect.flip(effect), (error) => (error instanceof AdminError ? error.reason : error))

const post = (
  body: string,
  headers: Record<string, string>,
  at: Effect.Effect<string, never, any> = baseUrl,
  path = AdminServer.PATH
) =>
  Effect.flatMap(at, (url) =>
    Effect.promise(async () => {
      const response = await fetch(`${url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body
      })
      return { status: response.status, headers: response.headers, body: (await response.json()) as unknown }
    })
  )

layer(TestServer, { excludeTestServices: true })("admin RPC over HTTP", (it) => {
  describe("operator token", () => {
    it.effect("a request without the token is 401 AUTH_REQUIRED, in the spec's body", () =>
      Effect.gen(function* () {
        const response = yield* post("{}", {})
        expect(response.status).toBe(401)
        expect(response.body).toEqual({ code: "AUTH_REQUIRED", error: expect.any(String) })
        expect(response.headers.get("www-authenticate")).toBe('Bearer realm="taskmeter"')
        expect(response.headers.get("cache-control")).toBe("no-store")
      })
    )

    it.effect("a wrong token is 401 AUTH_REQUIRED, and the typed client reports the status", () =>
      Effect.gen(function* () {
        const response = yield* post("{}", { authorization: `Bearer ${Redacted.value(OperatorToken.generate())}` })
        expect(response).toMatchObject({ status: 401, body: { code: "AUTH_REQUIRED" } })
        const error = yield* Effect.flip(withAdmin((admin) => admin.AccountList(), OperatorToken.generate()))
        expect(error._tag).toBe("RpcClientError")
        expect(error._tag === "RpcClientError" ? AdminClient.statusOf(error) : undefined).toBe(401)
      })
    )

    it.effect("an API key is not an operator token", () =>
      Effect.gen(function* () {
        const { key } = yield* withAdmin((admin) => admin.AccountCreate({ name: "not-an-operator" }))
        const response = yield* post("{}", { authorization: `Bearer ${key.secret}` })
        expect(response.status).toBe(401)
      })
    )

    it.effect(
      "a body that is not JSON request messages, or holds NUL or a lone surrogate, is 400 INVALID_REQUEST before any procedure runs",
      () =>
        Effect.gen(function* () {
          const operator = { authorization: `Bearer ${Redacted.value(token)}` }
          const message = (payload: unknown) =>
            JSON.stringify({ _tag: "Request", id: "1", tag: "AccountCreate", payload, headers: [] })
          const before = (yield* withAdmin((admin) => admin.AccountList())).length
          const cases: ReadonlyArray<readonly [string, string]> = [
            ["{", "not JSON"],
            ["", "not JSON"],
            ["null", "request message"],
            ["42", "request message"],
            [message({ name: "acme\u0000" }), "body.payload.name: contains U+0000"],
            [message({ name: "\ud800acme" }), "body.payload.name: contains an unpaired surrogate"]
          ]
          for (const [body, says] of cases) {
            const response = yield* post(body, operator)
            expect([body.slice(0, 40), response.status]).toEqual([body.slice(0, 40), 400])
            expect(response.body).toEqual({ code: "INVALID_REQUEST", error: expect.stringContaining(says) })
          }
          expect(yield* withAdmin((admin) => admin.AccountList())).toHaveLength(before)
        })
    )

    it.effect("the admin file tells the CLI where the server is and its token, readable by the owner only", () =>
      Effect.gen(function* () {
        const file = yield* AdminFile.read(dataDir)
        expect(file).toEqual({ url: yield* apiUrl, adminUrl: yield* baseUrl, token: Redacted.value(token) })
        expect(statSync(AdminFile.pathOf(dataDir)).mode & 0o777).toBe(0o600)
      })
    )
  })

  describe("its own listener", () => {
    it.effect("is apart from the public port, which answers 404 NOT_FOUND for the admin path, token or not", () =>
      Effect.gen(function* () {
        expect(yield* baseUrl).not.toBe(yield* apiUrl)
        for (const headers of [{}, { authorization: `Bearer ${Redacted.value(token)}` }] as Array<Record<string, string>>) {
          const response = yield* post("{}", headers, apiUrl)
          expect(response.status).toBe(404)
          expect(response.body).toEqual({
            code: "NOT_FOUND",
            error: `No endpoint POST ${AdminServer.PATH}; the API is described at /api/openapi.json.`
          })
        }
        const error = yield* Effect.flip(
          Effect.flatMap(apiUrl, (url) =>
            AdminClient.AdminClient.use((admin) => admin.AccountList()).pipe(Effect.provide(AdminClient.layer({ url, token })))
          )
        )
        expect(error._tag === "RpcClientError" ? AdminClient.statusOf(error) : undefined).toBe(404)
      })
    )

    it.effect("a second admin listener on a port already taken fails to start, saying what to do", () =>
      Effect.gen(function* () {
        const port = new URL(yield* baseUrl).port
        const error = yield* Effect.flip(
          Effect.scoped(
            Layer.build(AdminServer.layer({ token }).pipe(Layer.provide(ServerConfig.layerWith({ adminPort: Number(port) }))))
          )
        )
        expect(error._tag).toBe("AdminListenError")
        expect(error.message).toContain(`127.0.0.1:${port} (EADDRINUSE)`)
        expect(error.message).toContain("ADMIN_PORT=0")
      })
    )

    it.effect("serves nothing but the admin service: other paths are 404 NOT_FOUND", () =>
      Effect.gen(function* () {
        const response = yield* post("{}", { authorization: `Bearer ${Redacted.value(token)}` }, baseUrl, "/api/v1/usage")
        expect(response.status).toBe(404)
        expect(response.body).toMatchObject({ code: "NOT_FOUND" })
        const listed = yield* withAdmin((admin) => admin.AccountList())
        expect(Array.isArray(listed)).toBe(true)
      })
    )
  })

  describe("accounts and keys", () => {
    it.effect("account create makes an account with its opening credits and a working first key", () =>
      Effect.gen(function* () {
        const created = yield* withAdmin((admin) =>
          admin.AccountCreate({ name: "acme", creditsMicros: (25 * USD) as Money.Micros })
        )
        expect(created.account.name).toBe("acme")
        expect(created.balances).toEqual({
          balanceMicros: 25 * USD,
          reservedMicros: 0,
          availableMicros: 25 * USD,
          paymentReview: false
        })
        expect(created.key.secret).toMatch(/^tm_[A-Za-z0-9_-]{43}$/)
        expect(created.key.key.scopes).toEqual([
          "jobs:create",
          "jobs:read",
          "usage:read",
          "chat:create",
          "billing:create",
          "webhooks:manage"
        ])
        const usage = yield* Effect.flatMap(apiUrl, (url) =>
          Effect.promise(() => fetch(`${url}/api/v1/usage`, { headers: { authorization: `Bearer ${created.key.secret}` } }))
        )
        expect(usage.status).toBe(200)

        const listed = yield* withAdmin((admin) => admin.AccountList())
        expect(listed).toContainEqual({ ...created.account, balances: created.balances })
        const shown = yield* withAdmin((admin) => admin.AccountShow({ accountId: created.account.id }))
        expect(shown.keys.map((k) => k.id)).toEqual([created.key.key.id])
        expect(JSON.stringify(shown)).not.toContain(created.key.secret)
      })
    )

    it.effect("key create honours scopes and limits; key revoke refuses the key from then on", () =>
      Effect.gen(function* () {
        const { account } = yield* withAdmin((admin) => admin.AccountCreate({ name: "keys" }))
        const readOnly = yield* withAdmin((admin) =>
          admin.KeyCreate({ accountId: account.id, name: "ci", scopes: ["jobs:read", "usage:read"], usageLimit: 5 })
        )
        expect(readOnly.key).toMatchObject({ name: "ci", scopes: ["jobs:read", "usage:read"], usageLimit: 5, revokedAt: null })
        yield* withAdmin((admin) => admin.KeyRevoke({ accountId: account.id, keyId: readOnly.key.id }))
        const shown = yield* withAdmin((admin) => admin.AccountShow({ accountId: account.id }))
        expect(shown.keys.find((k) => k.id === readOnly.key.id)?.revokedAt).toEqual(expect.any(String))
        const usage = yield* Effect.flatMap(apiUrl, (url) =>
          Effect.promise(() => fetch(`${url}/api/v1/usage`, { headers: { "x-api-key": readOnly.secret } }))
        )
        expect(usage.status).toBe(403)
        expect(yield* Effect.promise(() => usage.json())).toMatchObject({ code: "PERMISSION_DENIED" })
      })
    )

    it.effect("unknown and malformed ids are AccountNotFound or KeyNotFound", () =>
      Effect.gen(function* () {
        const { account } = yield* withAdmin((admin) => admin.AccountCreate({ name: "ids" }))
        expect(yield* reasonOf(withAdmin((admin) => admin.AccountShow({ accountId: Ids.makeAccountId() })))).toBe(
          "AccountNotFound"
        )
        expect(yield* reasonOf(withAdmin((admin) => admin.AccountShow({ accountId: "acme" })))).toBe("AccountNotFound")
        expect(yield* reasonOf(withAdmin((admin) => admin.KeyCreate({ accountId: Ids.makeAccountId() })))).toBe("AccountNotFound")
        expect(yield* reasonOf(withAdmin((admin) => admin.KeyRevoke({ accountId: account.id, keyId: Ids.makeApiKeyId() })))).toBe(
          "KeyNotFound"
        )
        expect(yield* reasonOf(withAdmin((admin) => admin.KeyRevoke({ accountId: account.id, keyId: "nope" })))).toBe(
          "KeyNotFound"
        )
      })
    )
  })

  describe("retention", () => {
    it.effect("account retention sets the days an account's results are kept, or the default again", () =>
      Effect.gen(function* () {
        const { account } = yield* withAdmin((admin) => admin.AccountCreate({ name: "kept" }))
        const stored = AccountStore.AccountStore.use((store) => store.getResultRetention(account.id as Ids.AccountId))
        expect(yield* withAdmin((admin) => admin.AccountRetention({ accountId: account.id, days: 7 }))).toEqual({
          accountId: account.id,
          resultRetentionDays: 7,
          defaultDays: Retention.DEFAULT_DAYS
        })
        expect(yield* stored).toBe(7)
        expect(
          (yield* withAdmin((admin) => admin.AccountRetention({ accountId: account.id, days: null }))).resultRetentionDays
        ).toBe(null)
        expect(yield* stored).toBe(null)
        expect(yield* reasonOf(withAdmin((admin) => admin.AccountRetention({ accountId: Ids.makeAccountId(), days: 3 })))).toBe(
          "AccountNotFound"
        )
      })
    )
  })

  describe("credits", () => {
    it.effect("a grant adds credits once per outside reference", () =>
      Effect.gen(function* () {
        const { account } = yield* withAdmin((admin) => admin.AccountCreate({ name: "grants" }))
        const grant = { accountId: account.id, amountMicros: (10 * USD) as Money.Micros, note: "invoice 7", externalRef: "pay_7" }
        const first = yield* withAdmin((admin) => admin.CreditsGrant(grant))
        const again = yield* withAdmin((admin) => admin.CreditsGrant(grant))
        expect(again.entry.id).toBe(first.entry.id)
        expect(first.entry).toMatchObject({ kind: "grant", amountMicros: 10 * USD, note: "invoice 7" })
        const shown = yield* withAdmin((admin) => admin.AccountShow({ accountId: account.id }))
        expect(shown.balances.balanceMicros).toBe(10 * USD)
        expect(yield* reasonOf(withAdmin((admin) => admin.CreditsGrant({ ...grant, accountId: Ids.makeAccountId() })))).toBe(
          "AccountNotFound"
        )
      })
    )

    it.effect("a refund beyond the balance puts the account in payment review, and a grant clears it", () =>
      Effect.gen(function* () {
        const { account } = yield* withAdmin((admin) =>
          admin.AccountCreate({ name: "refunds", creditsMicros: USD as Money.Micros })
        )
        const refunded = yield* withAdmin((admin) =>
          admin.Refund({ accountId: account.id, amountMicros: (3 * USD) as Money.Micros })
        )
        expect(refunded.entry).toMatchObject({ kind: "refund", amountMicros: 3 * USD })
        expect(refunded.balances).toMatchObject({ balanceMicros: -2 * USD, paymentReview: true })
        const covered = yield* withAdmin((admin) =>
          admin.CreditsGrant({ accountId: account.id, amountMicros: (5 * USD) as Money.Micros })
        )
        expect(covered.balances).toMatchObject({ balanceMicros: 3 * USD, paymentReview: false })
      })
    )
  })

  describe("prices", () => {
    it.effect("price set takes effect at once, is public on GET /api/v1/prices and is saved in the store, not a file", () =>
      Effect.gen(function* () {
        const set = yield* withAdmin((admin) =>
          admin.PriceSet({ model: "song-lyrics", entry: { enabled: true, priceMicros: 7_000 as Money.Micros } })
        )
        expect(set).toEqual({ enabled: true, priceMicros: 7_000 })
        const list = yield* withAdmin((admin) => admin.PriceList())
        expect(list.models["song-lyrics"]).toEqual({ enabled: true, priceMicros: 7_000 })
        const prices = yield* Effect.flatMap(apiUrl, (url) =>
          Effect.promise(() => fetch(`${url}/api/v1/prices`).then((r) => r.text()))
        )
        expect(prices).toContain("7000")
        const stored = yield* PriceStore.PriceStore.use((store) => store.current)
        expect((stored?.list as typeof list | undefined)?.models["song-lyrics"]).toEqual({ enabled: true, priceMicros: 7_000 })
        expect(existsSync(pricesFile)).toBe(false)
      })
    )

    it.effect("price disable keeps the price but stops quotes; a list the catalog refuses is PriceListInvalid", () =>
      Effect.gen(function* () {
        yield* withAdmin((admin) => admin.PriceDisable({ model: "song-single-v5" }))
        const list = yield* withAdmin((admin) => admin.PriceList())
        expect(list.models["song-single-v5"]?.enabled).toBe(false)
        expect(
          yield* reasonOf(
            withAdmin((admin) =>
              admin.PriceSet({ model: "no-such-model", entry: { enabled: true, priceMicros: 1 as Money.Micros } })
            )
          )
        ).toBe("PriceListInvalid")
        expect(
          yield* reasonOf(
            withAdmin((admin) =>
              admin.PriceSet({
                model: "song-lyrics",
                entry: { enabled: true, priceMicros: 1 as Money.Micros, rateCard: [{ when: {}, priceMicros: 2 as Money.Micros }] }
              })
            )
          )
        ).toBe("PriceListInvalid")
      })
    )

    it.effect("price set of a daily budget alone keeps the rest of the entry; a set of nothing is InvalidRequest", () =>
      Effect.gen(function* () {
        const model = "delta-omni-flash-text-to-video-economy"
        const before = (yield* withAdmin((admin) => admin.PriceList())).models[model]
        const set = yield* withAdmin((admin) => admin.PriceSet({ model, dailyBudgetMicros: 1_000_000 as Money.Micros }))
        expect(set).toEqual({ ...before, dailyBudgetMicros: 1_000_000 })
        expect((yield* withAdmin((admin) => admin.PriceList())).models[model]).toEqual(set)
        expect(yield* reasonOf(withAdmin((admin) => admin.PriceSet({ model })))).toBe("InvalidRequest")
      })
    )
  })

  describe("task resolve", () => {
    const png = [{ base64: Buffer.from("a png").toString("base64"), contentType: "image/png" }]

    it.effect("succeeded charges the quote (or less), failed releases; only held tasks resolve", () =>
      Effect.gen(function* () {
        const { account } = yield* withAdmin((admin) =>
          admin.AccountCreate({ name: "held", creditsMicros: (5 * USD) as Money.Micros })
        )
        const first = yield* HeldTask.make(account.id, 2 * USD)
        const second = yield* HeldTask.make(account.id, USD)
        const third = yield* HeldTask.make(account.id, USD)
        const balances = () =>
          Effect.map(
            withAdmin((admin) => admin.AccountShow({ accountId: account.id })),
            (d) => d.balances
          )
        expect(yield* balances()).toMatchObject({ balanceMicros: 5 * USD, reservedMicros: 4 * USD })

        expect(
          yield* reasonOf(
            withAdmin((admin) =>
              admin.TaskResolve({ reason: "checked upstream", taskId: first, outcome: "succeeded", results: png })
            )
          )
        ).toBe("InvalidRequest")
        const succeeded = yield* withAdmin((admin) =>
          admin.TaskResolve({
            reason: "checked upstream",
            taskId: first,
            accountId: account.id,
            outcome: "succeeded",
            results: png
          })
        )
        expect(succeeded).toMatchObject({ status: "succeeded", chargedMicros: 2 * USD, errorCode: null })
        expect(yield* balances()).toMatchObject({ balanceMicros: 3 * USD, reservedMicros: 2 * USD })

        expect(
          yield* reasonOf(
            withAdmin((admin) =>
              admin.TaskResolve({
                reason: "checked upstream",
                taskId: second,
                accountId: account.id,
                outcome: "succeeded",
                results: png,
                chargeMicros: (2 * USD) as Money.Micros
              })
            )
          )
        ).toBe("InvalidRequest")
        const partial = yield* withAdmin((admin) =>
          admin.TaskResolve({
            reason: "checked upstream",
            taskId: second,
            accountId: account.id,
            outcome: "succeeded",
            results: png,
            chargeMicros: 250_000 as Money.Micros
          })
        )
        expect(partial.chargedMicros).toBe(250_000)

        const failed = yield* withAdmin((admin) =>
          admin.TaskResolve({ reason: "checked upstream", taskId: third, outcome: "failed" })
        )
        expect(failed).toMatchObject({ status: "failed", chargedMicros: null })
        expect(yield* balances()).toMatchObject({ balanceMicros: 5 * USD - 2_250_000, reservedMicros: 0 })

        expect(
          yield* reasonOf(
            withAdmin((admin) => admin.TaskResolve({ reason: "checked upstream", taskId: third, outcome: "failed" }))
          )
        ).toBe("TaskNotResolvable")
        expect(
          yield* reasonOf(
            withAdmin((admin) =>
              admin.TaskResolve({
                reason: "checked upstream",
                taskId: first,
                accountId: account.id,
                outcome: "succeeded",
                results: png
              })
            )
          )
        ).toBe("TaskNotResolvable")
        expect(
          yield* reasonOf(
            withAdmin((admin) =>
              admin.TaskResolve({
                reason: "checked upstream",
                taskId: Ids.makeTaskId(),
                accountId: account.id,
                outcome: "succeeded",
                results: png
              })
            )
          )
        ).toBe("TaskNotFound")
        expect(
          yield* reasonOf(
            withAdmin((admin) => admin.TaskResolve({ reason: "checked upstream", taskId: "task_x", outcome: "failed" }))
          )
        ).toBe("TaskNotFound")
      })
    )
  })

  describe("sign-in codes", () => {
    const redeem = (code: string) =>
      OAuthStore.OAuthStore.use((store) => store.redeemSignInCode(createHash("sha256").update(code).digest("hex"), new Date()))

    it.effect("a code is made for the account, expires in ten minutes and signs in once", () =>
      Effect.gen(function* () {
        const { account } = yield* withAdmin((admin) => admin.AccountCreate({ name: "mcp-owner" }))
        const before = Date.now()
        const created = yield* withAdmin((admin) => admin.SignInCodeCreate({ accountId: account.id }))
        expect(created.accountId).toBe(account.id)
        expect(created.code).toMatch(/^tmsi_[A-Za-z0-9_-]{43}$/)
        const lifetime = Date.parse(created.expiresAt) - before
        expect(lifetime).toBeGreaterThan((SignInCodes.DEFAULT_TTL_SECONDS - 5) * 1000)
        expect(lifetime).toBeLessThanOrEqual((SignInCodes.DEFAULT_TTL_SECONDS + 5) * 1000)
        expect(yield* redeem(created.code)).toBe(account.id)
        expect(yield* redeem(created.code)).toBeUndefined()
        const another = yield* withAdmin((admin) => admin.SignInCodeCreate({ accountId: account.id }))
        expect(another.code).not.toBe(created.code)
      })
    )

    it.effect("an unknown or malformed account is AccountNotFound, and no code is made", () =>
      Effect.gen(function* () {
        expect(yield* reasonOf(withAdmin((admin) => admin.SignInCodeCreate({ accountId: Ids.makeAccountId() })))).toBe(
          "AccountNotFound"
        )
        expect(yield* reasonOf(withAdmin((admin) => admin.SignInCodeCreate({ accountId: "acme" })))).toBe("AccountNotFound")
      })
    )
  })

  describe("MCP sign-ins", () => {
    const mcpStatus = (accessToken: string) =>
      Effect.flatMap(apiUrl, (url) =>
        Effect.promise(
          async () =>
            (
              await fetch(`${url}/mcp`, {
                method: "POST",
                headers: {
                  "content-type": "application/json",
                  accept: "application/json, text/event-stream",
                  authorization: `Bearer ${accessToken}`
                },
                body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" })
              })
            ).status
        )
      )

    it.effect("lists an account's sign-ins, newest first, and revoking one ends its tokens at once", () =>
      Effect.gen(function* () {
        const { account } = yield* withAdmin((admin) => admin.AccountCreate({ name: "signed-in" }))
        const url = yield* apiUrl
        const first = yield* mcpSignIn(account.id, url)
        const second = yield* mcpSignIn(account.id, url)
        const listed = yield* withAdmin((admin) => admin.McpSignInList({ accountId: account.id }))
        expect(new Set(listed.map((signIn) => signIn.id))).toEqual(new Set([first.grantId, second.grantId]))
        expect(listed.find((signIn) => signIn.id === first.grantId)).toMatchObject({
          accountId: account.id,
          clientId: first.clientId,
          clientName: null,
          apiKeyId: null,
          scopes: ["jobs:read", "usage:read"]
        })
        expect(yield* mcpStatus(first.accessToken)).toBe(200)

        const revoked = yield* withAdmin((admin) => admin.McpSignInRevoke({ signInId: first.grantId, accountId: account.id }))
        expect(revoked).toMatchObject({ id: first.grantId, accountId: account.id, alreadyRevoked: false })
        expect(yield* mcpStatus(first.accessToken)).toBe(401)
        expect(yield* mcpStatus(second.accessToken)).toBe(200)
        expect((yield* withAdmin((admin) => admin.McpSignInList({ accountId: account.id }))).map((signIn) => signIn.id)).toEqual([
          second.grantId
        ])
        const again = yield* withAdmin((admin) => admin.McpSignInRevoke({ signInId: first.grantId }))
        expect(again).toEqual({ ...revoked, alreadyRevoked: true })
      })
    )

    it.effect("an unknown account is AccountNotFound; an unknown sign-in, or one of another account, SignInNotFound", () =>
      Effect.gen(function* () {
        expect(yield* reasonOf(withAdmin((admin) => admin.McpSignInList({ accountId: Ids.makeAccountId() })))).toBe(
          "AccountNotFound"
        )
        const { account } = yield* withAdmin((admin) => admin.AccountCreate({ name: "nobody-signed-in" }))
        expect(yield* withAdmin((admin) => admin.McpSignInList({ accountId: account.id }))).toEqual([])
        const other = yield* mcpSignIn(Ids.makeAccountId(), yield* apiUrl)
        for (const payload of [{ signInId: other.grantId, accountId: account.id }, { signInId: crypto.randomUUID() }]) {
          expect(yield* reasonOf(withAdmin((admin) => admin.McpSignInRevoke(payload)))).toBe("SignInNotFound")
        }
        // An id no store could hold is refused with the body, before the procedure (see "operator token").
        const nul = yield* post(
          JSON.stringify({ _tag: "Request", id: "1", tag: "McpSignInRevoke", payload: { signInId: "x\u0000" }, headers: [] }),
          { authorization: `Bearer ${Redacted.value(token)}` }
        )
        expect([nul.status, (nul.body as any).code]).toEqual([400, "INVALID_REQUEST"])
        expect(yield* mcpStatus(other.accessToken)).toBe(200)
      })
    )
  })

  it.effect("audit finds the books balanced after all of the above", () =>
    Effect.gen(function* () {
      expect(yield* withAdmin((admin) => admin.Audit())).toEqual([])
    })
  )
})

describe("OperatorToken", () => {
  it("verifies only the exact token, from a Bearer header", () => {
    const verify = OperatorToken.verifier(Redacted.make("tmop_secret"))
    expect(verify(OperatorToken.fromAuthorization("Bearer tmop_secret"))).toBe(true)
    expect(verify(OperatorToken.fromAuthorization("bearer  tmop_secret "))).toBe(true)
    expect(verify(OperatorToken.fromAuthorization("Bearer tmop_secreT"))).toBe(false)
    expect(verify(OperatorToken.fromAuthorization("Bearer tmop_secret extra"))).toBe(false)
    expect(verify(OperatorToken.fromAuthorization("Basic tmop_secret"))).toBe(false)
    expect(verify(OperatorToken.fromAuthorization(undefined))).toBe(false)
  })

  it.effect("is taken from the configuration, else reused from the admin file, else made anew", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "taskmeter-token-"))
      const made = yield* OperatorToken.resolve(dir, Option.none())
      expect(Redacted.value(made)).toMatch(/^tmop_[A-Za-z0-9_-]{43}$/)
      expect(Redacted.value(yield* OperatorToken.resolve(dir, Option.none()))).not.toBe(Redacted.value(made))
      yield* AdminFile.write(dir, { url: "http://127.0.0.1:1", token: Redacted.value(made) })
      expect(Redacted.value(yield* OperatorToken.resolve(dir, Option.none()))).toBe(Redacted.value(made))
      const configured = Redacted.make("tmop_configured")
      expect(yield* OperatorToken.resolve(dir, Option.some(configured))).toBe(configured)
      expect(String(made)).not.toContain(Redacted.value(made))
    })
  )
})
