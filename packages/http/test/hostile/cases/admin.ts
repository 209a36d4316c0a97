/**
 * The admin RPC service (effect/rpc over HTTP, JSON serialization, operator token as a bearer
 * token) on its own listener (ADMIN_HOST/ADMIN_PORT): the cases target "admin", whose base URL is
 * HostileServer.adminBaseUrl, and the public port must answer 404 at /admin/rpc. With the token, a hostile payload must be refused (a 4xx, or the procedure failing with its
 * AdminError), never a defect or a 5xx; none of these cases may change anything.
 */
import type { HeaderList } from "../RawHttp.ts"
import { BAD_STRINGS, type HostileCase, HUGE_NUMBERS, json, nestedArrays } from "../Corpus.ts"

const HEADERS: HeaderList = [["content-type", "application/json"]]

let next = 0
/** One RPC request message, as effect/rpc's JSON serialization frames it. */
const request = (tag: string, payload: unknown) => json({ _tag: "Request", id: String(++next), tag, payload, headers: [] })
/** The same with a raw JSON payload (numbers JSON.stringify cannot write). */
const rawRequest = (tag: string, rawPayload: string) =>
  `{"_tag":"Request","id":"${++next}","tag":${json(tag)},"payload":${rawPayload},"headers":[]}`

const refused = (name: string, body: string, extra: Partial<HostileCase> = {}): HostileCase => ({
  name: `admin: ${name}`,
  target: "admin",
  auth: "operator",
  request: { method: "POST", path: "/admin/rpc", headers: HEADERS, body },
  // Not 404: the admin listener serves POST /admin/rpc; a 404 would be another listener's answer.
  expect: { status: [200, 400, 413, 415], adminRefusal: true },
  ...extra
})

/** Ids that name nothing; the procedures must refuse them, not act on them. */
const NO_ACCOUNT = "acct_does-not-exist"

export const adminCases = (): Array<HostileCase> => [
  // The public listener does not serve the admin RPC, whatever the credentials.
  {
    name: "admin: on the public port, with the operator token",
    target: "public",
    auth: "operator",
    request: { method: "POST", path: "/admin/rpc", headers: HEADERS, body: request("AccountList", {}) },
    expect: { status: 404, code: "NOT_FOUND" }
  },
  {
    name: "admin: on the public port, no token",
    target: "public",
    auth: "none",
    request: { method: "POST", path: "/admin/rpc", headers: HEADERS, body: request("AccountList", {}) },
    expect: { status: 404, code: "NOT_FOUND" }
  },
  // The operator token.
  {
    name: "admin: no token",
    target: "admin",
    auth: "none",
    request: { method: "POST", path: "/admin/rpc", headers: HEADERS, body: request("AccountList", {}) },
    expect: { status: 401, code: "AUTH_REQUIRED" }
  },
  {
    name: "admin: a customer's API key",
    target: "admin",
    auth: "customer",
    request: { method: "POST", path: "/admin/rpc", headers: HEADERS, body: request("AccountList", {}) },
    expect: { status: 401, code: "AUTH_REQUIRED" }
  },
  {
    name: "admin: token garbage with a UTF-8 lone surrogate",
    target: "admin",
    auth: "none",
    request: {
      method: "POST",
      path: "/admin/rpc",
      headers: [...HEADERS, ["authorization", "Bearer \xed\xa0\x80"]],
      body: request("AccountList", {})
    },
    expect: { status: 401, code: "AUTH_REQUIRED" }
  },
  {
    name: "admin: token of 10,000 characters",
    target: "admin",
    auth: "none",
    request: {
      method: "POST",
      path: "/admin/rpc",
      headers: [...HEADERS, ["authorization", `Bearer ${"t".repeat(10_000)}`]],
      body: request("AccountList", {})
    },
    expect: { status: 401, code: "AUTH_REQUIRED" }
  },
  {
    name: "admin: token NUL (raw byte)",
    target: "admin",
    auth: "none",
    request: {
      method: "POST",
      path: "/admin/rpc",
      headers: [...HEADERS, ["authorization", "Bearer \u0000"]],
      body: request("AccountList", {})
    },
    expect: { status: 400 }
  },
  {
    name: "admin: GET /admin/rpc",
    target: "admin",
    auth: "operator",
    request: { method: "GET", path: "/admin/rpc" },
    expect: { status: [404, 405], errorBody: true }
  },
  {
    name: "admin: /admin/rpc/%2e%2e",
    target: "admin",
    auth: "operator",
    request: { method: "POST", path: "/admin/rpc/%2e%2e", headers: HEADERS, body: "{}" },
    expect: { status: 404, errorBody: true }
  },
  // Envelopes.
  refused("body not JSON", "{"),
  refused("body empty", ""),
  refused("body null", "null"),
  {
    ...refused("body []", "[]"),
    expect: { status: [200, 400] },
    unsure: "an empty batch answered with an empty batch ([]) is the protocol's own answer; nothing was asked"
  },
  refused("body {}", "{}"),
  refused("request without tag", json({ _tag: "Request", id: "1", payload: {}, headers: [] })),
  refused("unknown procedure", request("Nope", {})),
  refused("procedure __proto__", request("__proto__", {})),
  refused("procedure constructor", request("constructor", {})),
  refused("procedure toString", request("toString", {})),
  refused("id not a number string", json({ _tag: "Request", id: "not-a-number", tag: "AccountList", payload: {}, headers: [] })),
  refused("headers garbage", json({ _tag: "Request", id: "1", tag: "AccountList", payload: {}, headers: "x" })),
  refused("payload nested 10,000 deep", rawRequest("AccountShow", `{"accountId":${nestedArrays(10_000, '"x"')}}`)),
  refused("body nested 100,000 deep", nestedArrays(100_000)),
  refused("300 KB body", request("AccountShow", { accountId: "a".repeat(300_000) })),
  // Hostile strings in every string payload position of the procedures that take them.
  ...BAD_STRINGS.flatMap(({ label, wrap }) => [
    refused(`AccountCreate: ${label} in name`, request("AccountCreate", { name: wrap("acme") })),
    refused(`AccountShow: ${label} in accountId`, request("AccountShow", { accountId: wrap(NO_ACCOUNT) })),
    refused(`KeyCreate: ${label} in accountId`, request("KeyCreate", { accountId: wrap(NO_ACCOUNT) })),
    refused(`KeyCreate: ${label} in scopes[0]`, request("KeyCreate", { accountId: NO_ACCOUNT, scopes: [wrap("jobs:read")] })),
    refused(`KeyRevoke: ${label} in keyId`, request("KeyRevoke", { accountId: NO_ACCOUNT, keyId: wrap("key") })),
    refused(
      `CreditsGrant: ${label} in note`,
      request("CreditsGrant", { accountId: wrap(NO_ACCOUNT), amountMicros: 1, note: wrap("note") })
    ),
    refused(
      `Refund: ${label} in externalRef`,
      request("Refund", { accountId: wrap(NO_ACCOUNT), amountMicros: 1, externalRef: wrap("ref") })
    ),
    refused(
      `PriceSet: ${label} in model`,
      request("PriceSet", { model: wrap("alpha-2-lite-text-to-image-economy"), dailyBudgetMicros: null })
    ),
    refused(`PriceDisable: ${label} in model`, request("PriceDisable", { model: wrap("no-such-model") })),
    refused(`TaskResolve: ${label} in taskId`, request("TaskResolve", { taskId: wrap("task"), outcome: "failed" })),
    refused(`TaskResolve: ${label} in outcome`, request("TaskResolve", { taskId: "task", outcome: wrap("failed") })),
    refused(`SignInCodeCreate: ${label} in accountId`, request("SignInCodeCreate", { accountId: wrap(NO_ACCOUNT) }))
  ]),
  ...["__proto__", "constructor", "prototype"].flatMap((name) => [
    refused(`AccountShow: accountId ${name}`, request("AccountShow", { accountId: name })),
    refused(`PriceDisable: model ${name}`, request("PriceDisable", { model: name })),
    refused(`PriceSet: model ${name}`, request("PriceSet", { model: name, entry: { enabled: true, priceMicros: 1 } })),
    refused(`SignInCodeCreate: accountId ${name}`, request("SignInCodeCreate", { accountId: name }))
  ]),
  refused("AccountShow: accountId ../", request("AccountShow", { accountId: "../../etc/passwd" })),
  refused(
    "PriceSet: payload with a __proto__ entry",
    rawRequest("PriceSet", `{"model":"no-such-model","__proto__":{"entry":{"enabled":true,"priceMicros":1}}}`)
  ),
  ...HUGE_NUMBERS.flatMap(({ label, raw }) => [
    refused(
      `CreditsGrant: amountMicros ${label}`,
      rawRequest("CreditsGrant", `{"accountId":${json(NO_ACCOUNT)},"amountMicros":${raw}}`)
    ),
    refused(
      `KeyCreate: rateLimitPerMinute ${label}`,
      rawRequest("KeyCreate", `{"accountId":${json(NO_ACCOUNT)},"rateLimitPerMinute":${raw}}`)
    ),
    refused(
      `PriceSet: dailyBudgetMicros ${label}`,
      rawRequest("PriceSet", `{"model":"no-such-model","dailyBudgetMicros":${raw}}`)
    )
  ]),
  refused("AccountCreate: name 42", request("AccountCreate", { name: 42 })),
  refused("AccountCreate: creditsMicros 2^64", rawRequest("AccountCreate", `{"name":"x","creditsMicros":18446744073709551616}`)),
  refused("AccountCreate: creditsMicros 1e400", rawRequest("AccountCreate", `{"name":"x","creditsMicros":1e400}`))
]
