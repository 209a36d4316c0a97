/**
 * The admin service for operator sessions on the public listener (POST /api/v1/operator/rpc):
 * only an operator's console session may call it (another user's session or an API key is 403
 * PERMISSION_DENIED), the CSRF check applies, procedures beyond the operator pages' are refused,
 * and a grant through it lands one ledger entry, as the admin CLI's does.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest, HttpServer } from "effect/http"
import { RpcClient, RpcSerialization } from "effect/rpc"
import type { RpcClientError } from "effect/rpc/RpcClientError"
import { describe, expect, layer } from "@effect/vitest"
import { Accounts, type Ids, LedgerStore, Money, Users } from "@taskmeter/kernel"
import { OAuthStore } from "@taskmeter/mcp"
import { MemoryStore } from "@taskmeter/storage-memory"
import { AdminRpcs, OPERATOR_PATH } from "../src/admin/AdminRpc.ts"
import * as OperatorToken from "../src/admin/OperatorToken.ts"
import * as Main from "../src/main.ts"
import * as ServerConfig from "../src/ServerConfig.ts"
import { HeldTask } from "@taskmeter/kernel/testing"

const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-operator-"))

const TestServer = Main.server({
  settings: { ...Main.defaults, workers: false },
  adapters: [],
  pricesFile: Main.pricesFileOf(dataDir),
  token: OperatorToken.generate(),
  dataDir
}).pipe(
  Layer.provideMerge(Layer.merge(MemoryStore.layer, OAuthStore.layerMemory)),
  Layer.provide(ServerConfig.layerWith({ port: 0, host: "127.0.0.1", dataDir, adminPort: 0 }))
)

const apiUrl = Effect.map(HttpServer.HttpServer, (server) => HttpServer.formatAddress(server.address))

interface Session {
  readonly cookie: string
  readonly csrfToken: string
  readonly accountId: string
}

const signUp = (operator: boolean) =>
  Effect.gen(function* () {
    const url = yield* apiUrl
    const email = `op-${crypto.randomUUID().slice(0, 8)}@example.com`
    const response = yield* Effect.promise(() =>
      fetch(`${url}/api/v1/auth/sign-up`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: url },
        body: JSON.stringify({ email, password: "correct horse battery staple" })
      })
    )
    expect(response.status).toBe(201)
    const body = (yield* Effect.promise(() => response.json())) as { csrfToken: string; account: { id: string } }
    if (operator) expect(yield* (yield* Users.Users).setOperator(email, true)).toBe(true)
    const cookie = response.headers.getSetCookie()[0]!.split(";")[0]!
    return { cookie, csrfToken: body.csrfToken, accountId: body.account.id } satisfies Session
  })

/** A raw POST to the operator service. */
const post = (headers: Record<string, string>, body: unknown) =>
  Effect.flatMap(apiUrl, (url) =>
    Effect.promise(async () => {
      const response = await fetch(`${url}${OPERATOR_PATH}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify(body)
      })
      return { status: response.status, body: (await response.json().catch(() => undefined)) as any }
    })
  )

const request = (tag: string, payload: unknown) => ({ _tag: "Request", id: "1", tag, payload, headers: [] })

/** Runs `f` with the RPC client the console uses, under `session`'s cookie and CSRF token. */
const asOperator = <A, E>(
  session: Session,
  f: (client: RpcClient.FromGroup<typeof AdminRpcs, RpcClientError>) => Effect.Effect<A, E>
) =>
  Effect.gen(function* () {
    const url = yield* apiUrl
    const http = Layer.effect(
      HttpClient.HttpClient,
      Effect.map(HttpClient.HttpClient, (client) =>
        client.pipe(
          HttpClient.mapRequest(
            HttpClientRequest.setHeaders({ cookie: session.cookie, origin: url, "x-csrf-token": session.csrfToken })
          ),
          HttpClient.filterStatusOk
        )
      )
    ).pipe(Layer.provide(FetchHttpClient.layer))
    return yield* Effect.flatMap(RpcClient.make(AdminRpcs), f).pipe(
      Effect.provide(RpcClient.layerProtocolHttp({ url: `${url}${OPERATOR_PATH}` })),
      Effect.provide([RpcSerialization.layerJson, http]),
      Effect.scoped
    )
  })

layer(TestServer, { excludeTestServices: true })("operator service on the public listener", (it) => {
  describe("who may call it", () => {
    it.effect("an operator's session lists accounts; another user's session is 403 PERMISSION_DENIED", () =>
      Effect.gen(function* () {
        const operator = yield* signUp(true)
        const accounts = yield* asOperator(operator, (client) => client.AccountList())
        expect(accounts.map((a) => a.id)).toContain(operator.accountId)

        const user = yield* signUp(false)
        const url = yield* apiUrl
        const refused = yield* post(
          { cookie: user.cookie, origin: url, "x-csrf-token": user.csrfToken },
          request("AccountList", {})
        )
        expect([refused.status, refused.body.code]).toEqual([403, "PERMISSION_DENIED"])
      })
    )

    it.effect("an API key is 403 PERMISSION_DENIED, even with an operator's cookie; no credential is 401", () =>
      Effect.gen(function* () {
        const operator = yield* signUp(true)
        const key = yield* (yield* Accounts.Accounts).createKey(operator.accountId as Ids.AccountId, {})
        const url = yield* apiUrl
        const withKey = yield* post({ authorization: `Bearer ${key.secret}` }, request("AccountList", {}))
        expect([withKey.status, withKey.body.code]).toEqual([403, "PERMISSION_DENIED"])
        const both = yield* post(
          { "x-api-key": key.secret, cookie: operator.cookie, origin: url, "x-csrf-token": operator.csrfToken },
          request("AccountList", {})
        )
        expect([both.status, both.body.code]).toEqual([403, "PERMISSION_DENIED"])
        const none = yield* post({ origin: url }, request("AccountList", {}))
        expect([none.status, none.body.code]).toEqual([401, "AUTH_REQUIRED"])
      })
    )

    it.effect("the CSRF check applies: no X-CSRF-Token, or a foreign Origin, is 403 CSRF_REJECTED", () =>
      Effect.gen(function* () {
        const operator = yield* signUp(true)
        const url = yield* apiUrl
        const noToken = yield* post({ cookie: operator.cookie, origin: url }, request("AccountList", {}))
        expect(noToken.body.code).toBe("CSRF_REJECTED")
        const foreign = yield* post(
          { cookie: operator.cookie, origin: "https://evil.example", "x-csrf-token": operator.csrfToken },
          request("AccountList", {})
        )
        expect(foreign.body.code).toBe("CSRF_REJECTED")
      })
    )

    it.effect("a procedure the operator pages do not use (AccountCreate, OperatorSet) is 403 before it runs", () =>
      Effect.gen(function* () {
        const operator = yield* signUp(true)
        const url = yield* apiUrl
        const headers = { cookie: operator.cookie, origin: url, "x-csrf-token": operator.csrfToken }
        const before = (yield* (yield* Accounts.Accounts).list).length
        const create = yield* post(headers, request("AccountCreate", { name: "sneaky" }))
        expect([create.status, create.body.code]).toEqual([403, "PERMISSION_DENIED"])
        const batch = yield* post(headers, [
          request("AccountList", {}),
          request("OperatorSet", { email: "x@y.z", operator: true })
        ])
        expect([batch.status, batch.body.code]).toEqual([403, "PERMISSION_DENIED"])
        expect((yield* (yield* Accounts.Accounts).list).length).toBe(before)
      })
    )

    it.effect("a body past 256 KB is 413 INPUT_TOO_LARGE and runs nothing", () =>
      Effect.gen(function* () {
        const operator = yield* signUp(true)
        const url = yield* apiUrl
        const headers = { cookie: operator.cookie, origin: url, "x-csrf-token": operator.csrfToken }
        const before = (yield* (yield* Accounts.Accounts).list).length
        const huge = yield* post(headers, request("AccountGrant", { note: "x".repeat(300 * 1024) }))
        expect([huge.status, huge.body.code]).toEqual([413, "INPUT_TOO_LARGE"])
        expect((yield* (yield* Accounts.Accounts).list).length).toBe(before)
        const fine = yield* post(headers, request("AccountList", {}))
        expect(fine.status).toBe(200)
      })
    )
  })

  describe("what it does", () => {
    it.effect("a grant lands one ledger entry with its note; the balances show it", () =>
      Effect.gen(function* () {
        const operator = yield* signUp(true)
        const customer = yield* signUp(false)
        const moved = yield* asOperator(operator, (client) =>
          client.CreditsGrant({ accountId: customer.accountId, amountMicros: Money.micros(2_500_000), note: "goodwill" })
        )
        expect(moved.balances.availableMicros).toBe(2_500_000)
        const page = yield* (yield* LedgerStore.LedgerStore).entries(customer.accountId as Ids.AccountId, { limit: 100 })
        expect(page!.entries.map((e) => [e.kind, e.amountMicros, e.note])).toEqual([["grant", 2_500_000, "goodwill"]])
      })
    )

    it.effect("the reconciliation queue lists a held task and resolves it as failed, releasing the reservation", () =>
      Effect.gen(function* () {
        const operator = yield* signUp(true)
        const { account } = yield* (yield* Accounts.Accounts).create({ name: "held", credits: Money.micros(1_000_000) })
        const heldId = yield* HeldTask.make(account.id, 200_000)
        const resolved = yield* asOperator(operator, (client) =>
          Effect.gen(function* () {
            const page = yield* client.TaskList({ status: "reconciliation_required" })
            expect(page.tasks.map((t) => t.id)).toContain(heldId)
            return yield* client.TaskResolve({
              taskId: heldId,
              accountId: account.id,
              outcome: "failed",
              reason: "upstream lost it"
            })
          })
        )
        expect(resolved.status).toBe("failed")
      })
    )
  })
})
