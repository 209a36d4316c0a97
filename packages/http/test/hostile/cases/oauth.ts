/**
 * The OAuth authorization server of the MCP endpoint: dynamic client registration (RFC 7591),
 * the authorization request and the sign-in form, the token and revocation endpoints (RFC
 * 6749, 7636, 7009), and the well-known metadata documents.
 */
import { randomUUID } from "node:crypto"
import type { HeaderList } from "../RawHttp.ts"
import { BAD_STRINGS, type HostileCase, json, nestedArrays, nestedObjects } from "../Corpus.ts"
import { type CorpusContext, REDIRECT_URI } from "./context.ts"

const METADATA_ERRORS = ["invalid_client_metadata", "invalid_redirect_uri", "invalid_request"]
const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"

const register = (
  name: string,
  body: string | unknown,
  expect: HostileCase["expect"] = { status: 400, oauthError: METADATA_ERRORS },
  headers: HeaderList = [["content-type", "application/json"]]
): HostileCase => ({
  name: `register: ${name}`,
  auth: "none",
  request: { method: "POST", path: "/register", headers, body: typeof body === "string" ? body : json(body) },
  expect
})

const base = { client_name: "Hostile client", redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: "none" }

const registration = (): Array<HostileCase> => [
  ...BAD_STRINGS.flatMap(({ label, wrap }) => [
    register(`${label} in client_name`, { ...base, client_name: wrap("Hostile") }),
    register(`${label} in redirect_uris[0]`, { ...base, redirect_uris: [wrap(REDIRECT_URI)] }),
    register(`${label} in redirect_uris[1]`, { ...base, redirect_uris: [REDIRECT_URI, wrap("http://127.0.0.1:8977/cb")] }),
    register(`${label} in scope`, { ...base, scope: wrap("jobs:read") }),
    register(`${label} in grant_types`, { ...base, grant_types: [wrap("authorization_code")] }),
    register(`${label} in token_endpoint_auth_method`, { ...base, token_endpoint_auth_method: wrap("none") }),
    register(`${label} in client_uri`, { ...base, client_uri: wrap("https://client.example/") }),
    register(`${label} in a metadata key`, { ...base, [wrap("client_name")]: "x" })
  ]),
  register("body not JSON", "{"),
  register("body empty", ""),
  register("body null", "null"),
  register("body []", "[]"),
  register("body a string", '"x"'),
  register("redirect_uris missing", { client_name: "x", token_endpoint_auth_method: "none" }),
  register("redirect_uris empty", { ...base, redirect_uris: [] }),
  register("redirect_uris a string", { ...base, redirect_uris: REDIRECT_URI }),
  register("redirect_uris [42]", { ...base, redirect_uris: [42] }),
  register("redirect_uris [null]", { ...base, redirect_uris: [null] }),
  register("redirect_uris nested", { ...base, redirect_uris: [[REDIRECT_URI]] }),
  register("redirect_uri javascript:", { ...base, redirect_uris: ["javascript:alert(1)"] }),
  register("redirect_uri data:", { ...base, redirect_uris: ["data:text/html,<script>alert(1)</script>"] }),
  register("redirect_uri with a fragment", { ...base, redirect_uris: ["https://client.example/cb#frag"] }),
  register("redirect_uri relative", { ...base, redirect_uris: ["/callback"] }),
  register(
    "redirect_uris 10,000 deep",
    `{"client_name":"x","token_endpoint_auth_method":"none","redirect_uris":${nestedArrays(10_000, json(REDIRECT_URI))}}`
  ),
  register(
    "client_name nested 10,000 objects deep",
    `{"token_endpoint_auth_method":"none","redirect_uris":[${json(REDIRECT_URI)}],"client_name":${nestedObjects(10_000)}}`
  ),
  register("client_name 42", { ...base, client_name: 42 }),
  register("client_name 100,000 characters", { ...base, client_name: "n".repeat(100_000) }),
  register(
    "body {__proto__: {redirect_uris}}",
    `{"__proto__":{"redirect_uris":[${json(REDIRECT_URI)}]},"token_endpoint_auth_method":"none"}`
  ),
  register("grant_types a string", { ...base, grant_types: "authorization_code" }),
  register("token_endpoint_auth_method unknown", { ...base, token_endpoint_auth_method: "magic" }),
  register("300 KB body", { ...base, client_name: "n".repeat(300_000) }, { status: [400, 413] }),
  {
    ...register("Content-Type text/plain", json(base), { status: [400, 415], oauthError: METADATA_ERRORS }, [
      ["content-type", "text/plain"]
    ]),
    unsure: "RFC 7591 §3.1 sends the metadata as application/json; a server may read a mislabelled JSON body anyway"
  }
]

const authorizeQuery = (context: CorpusContext, override: Record<string, string>): string => {
  const params: Record<string, string> = {
    response_type: "code",
    client_id: context.clientId,
    redirect_uri: REDIRECT_URI,
    code_challenge: CHALLENGE,
    code_challenge_method: "S256",
    state: "st",
    ...override
  }
  return Object.entries(params)
    .map(([k, v]) => `${k}=${v}`)
    .join("&")
}

/** Percent-encoded hostile text for a query: %00, and the UTF-8 bytes a lone surrogate would have. */
const QUERY_BAD = [
  { label: "%00", wrap: (text: string) => `${text}%00` },
  { label: "encoded lone surrogate", wrap: (text: string) => `${text}%ED%A0%80` },
  { label: "malformed percent-encoding", wrap: (text: string) => `${text}%E0%A4%A` }
] as const

const authorization = (context: CorpusContext): Array<HostileCase> => {
  // Before the client and its redirect URI are known good, the answer must not redirect (RFC 6749 §4.1.2.1).
  const unverified = ["client_id", "redirect_uri"]
  const fields = [
    "client_id",
    "redirect_uri",
    "state",
    "code_challenge",
    "code_challenge_method",
    "scope",
    "response_type",
    "resource"
  ]
  const encodedValue = (field: string) =>
    field === "client_id"
      ? context.clientId
      : field === "redirect_uri"
        ? encodeURIComponent(REDIRECT_URI)
        : field === "code_challenge"
          ? CHALLENGE
          : field === "code_challenge_method"
            ? "S256"
            : field === "scope"
              ? "jobs:read"
              : field === "response_type"
                ? "code"
                : field === "resource"
                  ? "http%3A%2F%2F127.0.0.1%2Fmcp"
                  : "st"
  return [
    ...fields.flatMap((field) =>
      QUERY_BAD.map(
        ({ label, wrap }): HostileCase => ({
          name: `authorize: ${label} in ${field}`,
          auth: "none",
          request: { method: "GET", path: `/authorize?${authorizeQuery(context, { [field]: wrap(encodedValue(field)) })}` },
          expect: unverified.includes(field)
            ? { status: 400 }
            : {
                status: [302, 303, 400],
                oauthError:
                  field === "scope"
                    ? ["invalid_scope", "invalid_request"]
                    : field === "response_type"
                      ? ["unsupported_response_type", "invalid_request"]
                      : field === "resource"
                        ? ["invalid_target", "invalid_request"]
                        : "invalid_request"
              }
        })
      )
    ),
    {
      name: "authorize: client_id __proto__",
      auth: "none",
      request: { method: "GET", path: `/authorize?${authorizeQuery(context, { client_id: "__proto__" })}` },
      expect: { status: 400 }
    },
    {
      name: "authorize: client_id constructor",
      auth: "none",
      request: { method: "GET", path: `/authorize?${authorizeQuery(context, { client_id: "constructor" })}` },
      expect: { status: 400 }
    },
    {
      name: "authorize: client_id of 5000 characters",
      auth: "none",
      request: { method: "GET", path: `/authorize?${authorizeQuery(context, { client_id: "c".repeat(5000) })}` },
      expect: { status: 400 }
    },
    {
      name: "authorize: client_id an https URL to a private address (metadata document)",
      auth: "none",
      request: {
        method: "GET",
        path: `/authorize?${authorizeQuery(context, { client_id: encodeURIComponent("https://169.254.169.254/client.json") })}`
      },
      expect: { status: 400 }
    },
    {
      name: "authorize: redirect_uri twice",
      auth: "none",
      request: {
        method: "GET",
        path: `/authorize?${authorizeQuery(context, {})}&redirect_uri=${encodeURIComponent("https://evil.example.com/cb")}`
      },
      expect: { status: 400 },
      unsure: "RFC 6749 §3.1: parameters must not repeat; with two redirect URIs neither is trusted, so no redirect"
    },
    {
      name: "authorize: state twice",
      auth: "none",
      request: { method: "GET", path: `/authorize?${authorizeQuery(context, {})}&state=again` },
      expect: { status: [302, 303, 400], oauthError: "invalid_request" },
      unsure: "RFC 6749 §3.1: a repeated parameter is invalid_request"
    },
    { name: "authorize: no query", auth: "none", request: { method: "GET", path: "/authorize" }, expect: { status: 400 } },
    {
      name: "authorize: code_challenge_method plain",
      auth: "none",
      request: { method: "GET", path: `/authorize?${authorizeQuery(context, { code_challenge_method: "plain" })}` },
      expect: { status: [302, 303, 400], oauthError: "invalid_request" }
    },
    {
      name: "authorize: code_challenge missing",
      auth: "none",
      request: {
        method: "GET",
        path: `/authorize?response_type=code&client_id=${context.clientId}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}&state=s`
      },
      expect: { status: [302, 303, 400], oauthError: "invalid_request" }
    },
    {
      name: "authorize: code_challenge of 2000 characters",
      auth: "none",
      request: { method: "GET", path: `/authorize?${authorizeQuery(context, { code_challenge: "A".repeat(2000) })}` },
      expect: { status: [302, 303, 400], oauthError: "invalid_request" }
    },
    {
      name: "authorize: state of 10,000 characters",
      auth: "none",
      request: { method: "GET", path: `/authorize?${authorizeQuery(context, { state: "s".repeat(10_000) })}` },
      expect: { status: [302, 303, 400], oauthError: "invalid_request" },
      unsure: "RFC 6749 sets no limit on state; an unbounded state echoed into a redirect is refused by a hardened server"
    }
  ]
}

const form = (fields: Record<string, string>) =>
  Object.entries(fields)
    .map(([k, v]) => `${k}=${v}`)
    .join("&")

const signIn = (): Array<HostileCase> => {
  const post = (
    name: string,
    body: string,
    headers: HeaderList = [["content-type", "application/x-www-form-urlencoded"]],
    expect: HostileCase["expect"] = { status: [400, 403] }
  ): HostileCase => ({
    name: `sign-in POST /authorize: ${name}`,
    auth: "none",
    request: { method: "POST", path: "/authorize", headers, body },
    expect
  })
  return [
    post("empty form", ""),
    post("pending garbage", form({ pending: "garbage", csrf: "x", credential: "tm_x", decision: "approve" })),
    post("pending %00", form({ pending: "%00", csrf: "%00", credential: "tm_x", decision: "approve" })),
    post(
      "pending encoded lone surrogate",
      form({ pending: "%ED%A0%80", csrf: "%ED%A0%80", credential: "%ED%A0%80", decision: "approve" })
    ),
    post("credential NUL", form({ pending: "x", csrf: "x", credential: "tm_%00", decision: "approve" })),
    post("decision NUL", form({ pending: "x", csrf: "x", credential: "tm_x", decision: "approve%00" })),
    post("__proto__ fields", "__proto__=x&constructor=y&pending=x"),
    post("malformed percent-encoding", "pending=%E0%A4%A&csrf=%&credential=%zz"),
    post(
      "JSON body",
      json({ pending: "x", csrf: "x", credential: "tm_x", decision: "approve" }),
      [["content-type", "application/json"]],
      { status: [400, 403, 415] }
    ),
    post(
      "cookie with NUL-free garbage and a lone surrogate",
      form({ pending: "x", csrf: "x", credential: "tm_x", decision: "approve" }),
      [
        ["content-type", "application/x-www-form-urlencoded"],
        ["cookie", "tm_csrf=\xed\xa0\x80; __proto__=1"]
      ]
    ),
    post("300 KB form", form({ pending: "p".repeat(300_000) }), [["content-type", "application/x-www-form-urlencoded"]], {
      status: [400, 403, 413]
    })
  ]
}

const tokenCases = (context: CorpusContext): Array<HostileCase> => {
  const token = (
    name: string,
    body: string,
    expect: HostileCase["expect"],
    headers: HeaderList = [["content-type", "application/x-www-form-urlencoded"]],
    extra: Partial<HostileCase> = {}
  ): HostileCase => ({
    name: `token: ${name}`,
    auth: "none",
    request: { method: "POST", path: "/token", headers, body },
    expect,
    ...extra
  })
  const code = (override: Record<string, string>) =>
    form({
      grant_type: "authorization_code",
      code: "nonexistent",
      code_verifier: "v".repeat(43),
      redirect_uri: encodeURIComponent(REDIRECT_URI),
      client_id: context.clientId,
      ...override
    })
  const INVALID = { status: 400, oauthError: ["invalid_request", "invalid_grant"] }
  /** A request naming no client: invalid_request, or invalid_client (401) when the client is checked first. */
  const NO_CLIENT = { status: [400, 401], oauthError: ["invalid_request", "invalid_client", "unsupported_grant_type"] }
  return [
    token("empty body", "", NO_CLIENT),
    token("grant_type missing", form({ code: "x", client_id: context.clientId }), {
      status: 400,
      oauthError: ["invalid_request", "unsupported_grant_type"]
    }),
    token("grant_type %00", form({ grant_type: "authorization_code%00", client_id: context.clientId }), {
      status: 400,
      oauthError: ["invalid_request", "unsupported_grant_type"]
    }),
    token("grant_type unknown", form({ grant_type: "password", username: "a", password: "b", client_id: context.clientId }), {
      status: 400,
      oauthError: "unsupported_grant_type"
    }),
    ...QUERY_BAD.flatMap(({ label, wrap }) => [
      token(`${label} in code`, code({ code: wrap("abc") }), INVALID),
      token(`${label} in code_verifier`, code({ code_verifier: wrap("v".repeat(43)) }), INVALID),
      token(`${label} in redirect_uri`, code({ redirect_uri: wrap(encodeURIComponent(REDIRECT_URI)) }), INVALID),
      token(`${label} in client_id`, code({ client_id: wrap(context.clientId) }), {
        status: [400, 401],
        oauthError: ["invalid_request", "invalid_client", "invalid_grant"]
      }),
      token(
        `${label} in refresh_token`,
        form({ grant_type: "refresh_token", refresh_token: wrap("rt"), client_id: context.clientId }),
        INVALID
      ),
      token(`${label} in resource`, code({ resource: wrap("http%3A%2F%2F127.0.0.1%2Fmcp") }), {
        status: 400,
        oauthError: ["invalid_request", "invalid_grant", "invalid_target"]
      })
    ]),
    token("code_verifier of 10,000 characters", code({ code_verifier: "v".repeat(10_000) }), INVALID),
    token("code_verifier too short", code({ code_verifier: "short" }), INVALID),
    token("code twice", `${code({})}&code=other`, { status: 400, oauthError: ["invalid_request", "invalid_grant"] }, undefined, {
      unsure: "RFC 6749 §3.2: parameters must not repeat (invalid_request); invalid_grant is also safe"
    }),
    token("client_id __proto__", code({ client_id: "__proto__" }), {
      status: [400, 401],
      oauthError: ["invalid_client", "invalid_request", "invalid_grant"]
    }),
    token(
      "JSON body",
      json({ grant_type: "authorization_code", code: "x" }),
      { status: 400, oauthError: ["invalid_request", "unsupported_grant_type"] },
      [["content-type", "application/json"]]
    ),
    token("malformed form encoding", "grant_type=%&code=%zz", NO_CLIENT),
    token("300 KB body", form({ grant_type: "authorization_code", code: "c".repeat(300_000) }), { status: [400, 413] }),
    token(
      "Authorization Basic garbage",
      code({}),
      { status: [400, 401], oauthError: ["invalid_client", "invalid_request", "invalid_grant"] },
      [
        ["content-type", "application/x-www-form-urlencoded"],
        ["authorization", "Basic \xed\xa0\x80"]
      ]
    ),
    {
      name: "revoke: token %00",
      auth: "none",
      request: {
        method: "POST",
        path: "/revoke",
        headers: [["content-type", "application/x-www-form-urlencoded"]],
        body: form({ token: "x%00", client_id: context.clientId })
      },
      expect: { status: [200, 400] },
      unsure: "RFC 7009 §2.2 answers 200 for a token it does not know; refusing the malformed one as invalid_request is also fine"
    },
    {
      name: "revoke: empty body",
      auth: "none",
      request: { method: "POST", path: "/revoke", headers: [["content-type", "application/x-www-form-urlencoded"]], body: "" },
      expect: { status: [400, 401], oauthError: ["invalid_request", "invalid_client"] }
    }
  ]
}

const wellKnown = (): Array<HostileCase> => [
  {
    name: "well-known: authorization server metadata with a query of garbage",
    auth: "none",
    request: { method: "GET", path: "/.well-known/oauth-authorization-server?x=%00&__proto__=1" },
    expect: { status: 200 }
  },
  {
    name: "well-known: POST authorization server metadata",
    auth: "none",
    request: {
      method: "POST",
      path: "/.well-known/oauth-authorization-server",
      headers: [["content-type", "application/json"]],
      body: "{}"
    },
    expect: { status: [404, 405], errorBody: true }
  },
  {
    name: "well-known: /.well-known/oauth-authorization-server/%00",
    auth: "none",
    request: { method: "GET", path: "/.well-known/oauth-authorization-server/%00" },
    expect: { status: 404, errorBody: true }
  },
  {
    name: "well-known: /.well-known/oauth-protected-resource/mcp/..%2f..%2f",
    auth: "none",
    request: { method: "GET", path: "/.well-known/oauth-protected-resource/mcp/..%2f..%2f" },
    expect: { status: 404, errorBody: true }
  },
  {
    name: "well-known: /.well-known/oauth-protected-resource/%ED%A0%80",
    auth: "none",
    request: { method: "GET", path: "/.well-known/oauth-protected-resource/%ED%A0%80" },
    expect: { status: 400, code: "INVALID_REQUEST" }
  },
  {
    name: "well-known: /.well-known/openid-configuration",
    auth: "none",
    request: { method: "GET", path: "/.well-known/openid-configuration" },
    expect: { status: 404, errorBody: true }
  },
  {
    name: "well-known: /.well-known/%2e%2e/%2e%2e/admin/rpc",
    auth: "none",
    request: { method: "GET", path: "/.well-known/%2e%2e/%2e%2e/admin/rpc" },
    expect: { status: 404, errorBody: true }
  },
  {
    name: "well-known: protected resource metadata with Origin evil",
    auth: "none",
    request: {
      method: "GET",
      path: "/.well-known/oauth-protected-resource/mcp",
      headers: [["origin", "https://evil.example.com"]]
    },
    expect: { status: 200 }
  },
  {
    name: "register: OPTIONS with a hostile Origin and method",
    auth: "none",
    request: {
      method: "OPTIONS",
      path: "/register",
      headers: [
        ["origin", "null"],
        ["access-control-request-method", "\xed\xa0\x80"]
      ]
    },
    expect: { status: [200, 204, 400, 403] }
  },
  {
    name: "authorize: GET with a random client (valid UUID)",
    auth: "none",
    request: {
      method: "GET",
      path: `/authorize?response_type=code&client_id=${randomUUID()}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}&code_challenge=${CHALLENGE}&code_challenge_method=S256`
    },
    expect: { status: 400 }
  }
]

export const oauthCases = (context: CorpusContext): Array<HostileCase> => [
  ...registration(),
  ...authorization(context),
  ...signIn(),
  ...tokenCases(context),
  ...wellKnown()
]
