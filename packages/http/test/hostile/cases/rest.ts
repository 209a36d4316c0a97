/**
 * The rest of the REST API: media upload, results and result links, usage, prices, models, chat
 * (completions, models, request history), and unknown routes.
 */
import { randomUUID } from "node:crypto"
import type { HeaderList } from "../RawHttp.ts"
import { BAD_STRINGS, type HostileCase, HUGE_NUMBERS, json, nestedArrays, PATH_TRICKS, pathTrickExpectation } from "../Corpus.ts"
import type { CorpusContext } from "./context.ts"

const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=", "base64")
const INVALID_REQUEST = { status: 400, code: "INVALID_REQUEST" } as const
const NOT_FOUND_ROUTE = { status: 404, errorBody: true } as const

const upload = (
  name: string,
  headers: HeaderList,
  body: string | Uint8Array | undefined,
  expect: HostileCase["expect"],
  extra: Partial<HostileCase> = {}
): HostileCase => ({
  name,
  auth: "customer",
  request: { method: "POST", path: "/api/v1/media", headers, ...(body === undefined ? {} : { body }) },
  expect,
  ...extra
})

const media = (): Array<HostileCase> => [
  upload("media: no body", [["content-type", "image/png"]], undefined, INVALID_REQUEST),
  upload("media: empty body", [["content-type", "image/png"]], "", INVALID_REQUEST),
  upload("media: no Content-Type", [], PNG, INVALID_REQUEST),
  upload("media: Content-Type text/plain", [["content-type", "text/plain"]], PNG, INVALID_REQUEST),
  upload("media: Content-Type application/json with JSON", [["content-type", "application/json"]], '{"a":1}', INVALID_REQUEST),
  upload("media: image/png with text bytes", [["content-type", "image/png"]], "not a png at all", INVALID_REQUEST),
  upload(
    "media: image/svg+xml (script-capable)",
    [["content-type", "image/svg+xml"]],
    '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
    INVALID_REQUEST
  ),
  upload("media: video/mp4 with PNG bytes", [["content-type", "video/mp4"]], PNG, INVALID_REQUEST),
  upload(
    "media: Content-Type with a UTF-8 lone surrogate",
    [["content-type", "image/png; name=\xed\xa0\x80"]],
    PNG,
    { status: [201, 400] },
    {
      unsure: "a parameter of a valid type: accepting (201) or refusing (400) are both defensible"
    }
  ),
  upload("media: Content-Type with NUL (raw byte)", [["content-type", "image/png\u0000"]], PNG, { status: 400 }),
  upload(
    "media: Content-Type twice",
    [
      ["content-type", "image/png"],
      ["content-type", "text/html"]
    ],
    PNG,
    { status: [201, 400] },
    {
      unsure: "Node keeps the first Content-Type of a duplicate"
    }
  ),
  upload(
    "media: Content-Length 1 GB, 8 bytes sent",
    [
      ["content-type", "image/png"],
      ["content-length", String(2 ** 30)]
    ],
    PNG.subarray(0, 8),
    { status: [400, 413], code: "INPUT_TOO_LARGE" },
    { timeoutMs: 5_000 }
  ),
  {
    name: "media: no credentials",
    auth: "none",
    request: { method: "POST", path: "/api/v1/media", headers: [["content-type", "image/png"]], body: PNG },
    expect: { status: 401, code: "AUTH_REQUIRED" }
  },
  {
    name: "media: GET /api/v1/media",
    auth: "customer",
    request: { method: "GET", path: "/api/v1/media" },
    expect: { status: [404, 405], errorBody: true }
  }
]

const results = (): Array<HostileCase> => [
  ...PATH_TRICKS.map(
    (trick): HostileCase => ({
      name: `results/{id}: ${trick.label}`,
      auth: "customer",
      request: { method: "GET", path: `/api/v1/results/${trick.segment}` },
      expect: pathTrickExpectation(trick, "JOB_NOT_FOUND")
    })
  ),
  {
    name: "results/{id}: Range garbage on an unknown result",
    auth: "customer",
    request: { method: "GET", path: `/api/v1/results/${randomUUID()}`, headers: [["range", "bytes=abc-\u00ff"]] },
    expect: { status: 404, code: "JOB_NOT_FOUND" }
  },
  {
    name: "results/{id}: no credentials",
    auth: "none",
    request: { method: "GET", path: `/api/v1/results/${randomUUID()}` },
    expect: { status: 401, code: "AUTH_REQUIRED" }
  }
]

const resultLinks = (): Array<HostileCase> => {
  const id = randomUUID()
  const queries = [
    "",
    "?acct=&exp=&sig=",
    "?acct=__proto__&exp=9999999999&sig=AAAA",
    "?acct=%00&exp=9999999999&sig=%00",
    "?acct=a&exp=1e400&sig=x",
    "?acct=a&exp=NaN&sig=x",
    "?acct=a&exp=-0&sig=x",
    "?acct=a&exp=18446744073709551616&sig=x",
    "?acct=a&acct=b&exp=9999999999&exp=1&sig=x&sig=y",
    "?acct=%ED%A0%80&exp=9999999999&sig=%ED%A0%80",
    `?acct=a&exp=9999999999&sig=${"A".repeat(5000)}`,
    "?__proto__[x]=1&constructor[prototype][y]=1"
  ]
  return [
    ...queries.map(
      (query): HostileCase => ({
        name: `result-links: ${query === "" ? "no query" : query.slice(0, 60)}`,
        auth: "none",
        request: { method: "GET", path: `/api/v1/result-links/${id}${query}` },
        expect: { status: 404, code: "JOB_NOT_FOUND" },
        unsure:
          "decisions.md: every link that does not work is the same 404; the code of that 404 is JOB_NOT_FOUND as for results"
      })
    ),
    ...["%00", "%ED%A0%80", "..%2f..%2fjobs", "__proto__"].map(
      (segment): HostileCase => ({
        name: `result-links/{id}: ${segment}`,
        auth: "none",
        request: { method: "GET", path: `/api/v1/result-links/${segment}?acct=a&exp=9999999999&sig=x` },
        // A malformed URL (not UTF-8) is 400 INVALID_REQUEST on every route; any other link that does not work is the same 404.
        expect: segment === "%ED%A0%80" ? { status: 400, code: "INVALID_REQUEST" } : { status: 404, code: "JOB_NOT_FOUND" }
      })
    ),
    ...["%00", "__proto__"].map(
      (segment): HostileCase => ({
        name: `media-links/{id}: ${segment}`,
        auth: "none",
        request: { method: "GET", path: `/api/v1/media-links/${segment}?acct=%00&exp=1e400&sig=%ED%A0%80` },
        expect: { status: 404, errorBody: true }
      })
    )
  ]
}

const usage = (): Array<HostileCase> => [
  ...["0", "101", "-1", "1e400", "NaN", "abc", "1.5", "%00", "1%00", "%ED%A0%80", "-0", "18446744073709551616", ""].map(
    (limit): HostileCase => ({
      name: `usage: limit=${limit}`,
      auth: "customer",
      request: { method: "GET", path: `/api/v1/usage?limit=${limit}` },
      expect: INVALID_REQUEST,
      ...(limit === "-0" ? { unsure: "-0 read as a number is 0, below the minimum 1" } : {})
    })
  ),
  {
    name: "usage: limit=0x10",
    auth: "customer",
    request: { method: "GET", path: "/api/v1/usage?limit=0x10" },
    expect: { status: [200, 400] },
    unsure: "0x10 is not a decimal integer, but a lenient reader takes 16"
  },
  {
    name: "usage: limit twice",
    auth: "customer",
    request: { method: "GET", path: "/api/v1/usage?limit=5&limit=500" },
    expect: { status: [200, 400] },
    unsure: "a repeated parameter: refused or one of them taken"
  },
  ...["garbage", "%00", "%ED%A0%80", "__proto__", "x".repeat(2000)].map(
    (before): HostileCase => ({
      name: `usage: before=${before.slice(0, 30)}`,
      auth: "customer",
      request: { method: "GET", path: `/api/v1/usage?before=${before}` },
      expect: { status: [400, 404], code: ["INVALID_REQUEST", "REQUEST_NOT_FOUND"] },
      unsure: "the spec gives no code for a bad usage cursor; chat's is 404 REQUEST_NOT_FOUND, a 400 INVALID_REQUEST fits too"
    })
  ),
  {
    name: "usage: no credentials",
    auth: "none",
    request: { method: "GET", path: "/api/v1/usage" },
    expect: { status: 401, code: "AUTH_REQUIRED" }
  },
  {
    name: "usage: x-api-key NUL-free garbage",
    auth: "none",
    request: { method: "GET", path: "/api/v1/usage", headers: [["x-api-key", "x".repeat(5000)]] },
    expect: { status: 401, code: "AUTH_REQUIRED" }
  }
]

const catalog = (): Array<HostileCase> => [
  {
    name: "prices: POST",
    auth: "none",
    request: { method: "POST", path: "/api/v1/prices", headers: [["content-type", "application/json"]], body: "{}" },
    expect: { status: [404, 405], errorBody: true }
  },
  {
    name: "prices: DELETE",
    auth: "customer",
    request: { method: "DELETE", path: "/api/v1/prices" },
    expect: { status: [404, 405], errorBody: true }
  },
  {
    name: "prices: query garbage",
    auth: "none",
    request: { method: "GET", path: "/api/v1/prices?model=%00&__proto__=1&x=%ED%A0%80" },
    expect: { status: [200, 400] }
  },
  {
    name: "prices: /api/v1/prices/%00",
    auth: "none",
    request: { method: "GET", path: "/api/v1/prices/%00" },
    expect: NOT_FOUND_ROUTE
  },
  {
    name: "prices: /api/v1/prices/../models",
    auth: "none",
    request: { method: "GET", path: "/api/v1/prices/../models" },
    expect: { status: [200, 404] },
    unsure: "a server that resolves dot segments serves /api/v1/models (public), one that does not answers 404"
  },
  {
    name: "models: POST",
    auth: "none",
    request: { method: "POST", path: "/api/v1/models", headers: [["content-type", "application/json"]], body: "{}" },
    expect: { status: [404, 405], errorBody: true }
  },
  {
    name: "models: /api/v1/models/__proto__",
    auth: "none",
    request: { method: "GET", path: "/api/v1/models/__proto__" },
    expect: NOT_FOUND_ROUTE
  },
  {
    name: "models: query garbage",
    auth: "none",
    request: { method: "GET", path: "/api/v1/models?slug=%00&category=%ED%A0%80" },
    expect: { status: [200, 400] }
  },
  {
    name: "models: Accept garbage",
    auth: "none",
    request: { method: "GET", path: "/api/v1/models", headers: [["accept", "\xed\xa0\x80/\xff"]] },
    expect: { status: [200, 406] }
  },
  {
    name: "chat/models: POST",
    auth: "none",
    request: { method: "POST", path: "/api/v1/chat/models", headers: [["content-type", "application/json"]], body: "{}" },
    expect: { status: [404, 405], errorBody: true }
  }
]

const unknownRoutes = (): Array<HostileCase> =>
  [
    "/nope",
    "/api",
    "/api/v1",
    "/api/v2/jobs",
    "/api/v1/nope",
    "/api/v1/jobs/x/y",
    "/api/v1/%00",
    "/api/v1/jobs%00",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/../../etc/passwd",
    "/.env",
    "/.git/config",
    "/admin",
    "/api/v1/JOBS",
    "/api/v1/__proto__",
    "/api/v1/constructor",
    "/%ED%A0%80",
    "/api/v1/chat",
    "/api/v1/chat/requests/x/y",
    `/${"a/".repeat(2000)}`
  ]
    .map(
      (path): HostileCase => ({
        name: `unknown route GET ${path.slice(0, 50)}`,
        auth: "customer",
        request: { method: "GET", path },
        expect: NOT_FOUND_ROUTE
      })
    )
    .map((c) =>
      c.name === "unknown route GET /api/v1/JOBS"
        ? {
            ...c,
            expect: { status: [200, 404] },
            unsure: "the router matches paths case-insensitively and serves the caller's own list: no bypass"
          }
        : c
    )
    // Not valid percent-encoded UTF-8: a malformed URL, 400 INVALID_REQUEST on every route, known or not.
    .map((c) => (c.name === "unknown route GET /%ED%A0%80" ? { ...c, expect: INVALID_REQUEST } : c))

const chat = (context: CorpusContext): Array<HostileCase> => {
  const model = context.chatModel
  const message = { role: "user", content: "Say hello." }
  const valid = { model, messages: [message], max_tokens: 16 }
  const completion = (
    name: string,
    body: unknown,
    expect: HostileCase["expect"] = INVALID_REQUEST,
    extra: Partial<HostileCase> = {}
  ): HostileCase => ({
    name: `chat: ${name}`,
    auth: "customer",
    request: {
      method: "POST",
      path: "/api/v1/chat/completions",
      headers: [["content-type", "application/json"]],
      body: typeof body === "string" ? body : json(body)
    },
    expect,
    ...extra
  })
  const tool = {
    type: "function",
    function: { name: "lookup", description: "Looks up.", parameters: { type: "object", properties: { q: { type: "string" } } } }
  }
  const toolCall = { id: "call_1", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } }
  const positions: ReadonlyArray<[string, (bad: string) => unknown]> = [
    ["model", (bad) => ({ ...valid, model: bad })],
    ["messages[0].content", (bad) => ({ ...valid, messages: [{ role: "user", content: bad }] })],
    ["messages[0].role", (bad) => ({ ...valid, messages: [{ role: bad, content: "hi" }] })],
    ["messages[0].name", (bad) => ({ ...valid, messages: [{ role: "user", content: "hi", name: bad }] })],
    [
      "messages[0].content[0].text (parts)",
      (bad) => ({ ...valid, messages: [{ role: "user", content: [{ type: "text", text: bad }] }] })
    ],
    [
      "messages[0].content[0].type (parts)",
      (bad) => ({ ...valid, messages: [{ role: "user", content: [{ type: bad, text: "hi" }] }] })
    ],
    ["system message content", (bad) => ({ ...valid, messages: [{ role: "system", content: bad }, message] })],
    ["tools[0].function.name", (bad) => ({ ...valid, tools: [{ ...tool, function: { ...tool.function, name: bad } }] })],
    [
      "tools[0].function.description",
      (bad) => ({ ...valid, tools: [{ ...tool, function: { ...tool.function, description: bad } }] })
    ],
    [
      "tools[0].function.parameters key",
      (bad) => ({
        ...valid,
        tools: [
          { ...tool, function: { ...tool.function, parameters: { type: "object", properties: { [bad]: { type: "string" } } } } }
        ]
      })
    ],
    [
      "assistant tool_calls[0].function.arguments",
      (bad) => ({
        ...valid,
        messages: [
          message,
          { role: "assistant", content: null, tool_calls: [{ ...toolCall, function: { ...toolCall.function, arguments: bad } }] },
          { role: "tool", tool_call_id: "call_1", content: "r" }
        ]
      })
    ],
    [
      "assistant tool_calls[0].id",
      (bad) => ({
        ...valid,
        messages: [
          message,
          { role: "assistant", content: null, tool_calls: [{ ...toolCall, id: bad }] },
          { role: "tool", tool_call_id: bad, content: "r" }
        ]
      })
    ],
    [
      "tool message tool_call_id",
      (bad) => ({
        ...valid,
        messages: [
          message,
          { role: "assistant", content: null, tool_calls: [toolCall] },
          { role: "tool", tool_call_id: bad, content: "r" }
        ]
      })
    ],
    [
      "tool message content",
      (bad) => ({
        ...valid,
        messages: [
          message,
          { role: "assistant", content: null, tool_calls: [toolCall] },
          { role: "tool", tool_call_id: "call_1", content: bad }
        ]
      })
    ],
    ["a message key", (bad) => ({ ...valid, messages: [{ role: "user", content: "hi", [bad]: "x" }] })],
    ["stop", (bad) => ({ ...valid, stop: [bad] })],
    ["user", (bad) => ({ ...valid, user: bad })]
  ]
  const strings = positions.flatMap(([where, make]) =>
    BAD_STRINGS.map(({ label, wrap }) =>
      completion(
        `${label} in ${where}`,
        make(wrap("hello")),
        where === "model" ? { status: [400, 404], code: ["INVALID_REQUEST", "MODEL_NOT_FOUND"] } : INVALID_REQUEST,
        where === "model"
          ? { unsure: "a model id with NUL names no model (404 MODEL_NOT_FOUND) or is malformed (400)" }
          : where === "a message key" || where === "user"
            ? { unsure: "chat bodies tolerate unknown members; NUL in one is still refused as hostile input" }
            : {}
      )
    )
  )
  return [
    ...strings,
    ...["", "{", "null", "[]", "42", '"x"', '{"model":'].map((body) => completion(`body ${json(body)}`, body)),
    completion("model missing", { messages: [message] }),
    completion("messages missing", { model }),
    completion("messages empty", { model, messages: [] }),
    completion("messages is a string", { model, messages: "hi" }),
    completion("messages [null]", { model, messages: [null] }),
    completion("messages [42]", { model, messages: [42] }),
    completion("message without role", { model, messages: [{ content: "hi" }] }),
    completion("role 42", { model, messages: [{ role: 42, content: "hi" }] }),
    completion("role __proto__", { model, messages: [{ role: "__proto__", content: "hi" }] }),
    completion("content 42", { model, messages: [{ role: "user", content: 42 }] }),
    completion("content {}", { model, messages: [{ role: "user", content: {} }] }),
    completion("model 42", { ...valid, model: 42 }),
    completion("model __proto__", { ...valid, model: "__proto__" }, { status: 404, code: "MODEL_NOT_FOUND" }),
    completion("model constructor", { ...valid, model: "constructor" }, { status: 404, code: "MODEL_NOT_FOUND" }),
    completion("model toString", { ...valid, model: "toString" }, { status: 404, code: "MODEL_NOT_FOUND" }),
    ...HUGE_NUMBERS.map(({ label, raw }) =>
      completion(`max_tokens ${label}`, json(valid).replace('"max_tokens":16', `"max_tokens":${raw}`))
    ),
    completion("max_tokens 0", { ...valid, max_tokens: 0 }),
    completion("max_tokens -1", { ...valid, max_tokens: -1 }),
    completion('stream "yes"', { ...valid, stream: "yes" }),
    completion("tools is an object", { ...valid, tools: {} }),
    completion("tools [null]", { ...valid, tools: [null] }),
    completion("temperature 1e400", json(valid).replace('"max_tokens":16', '"max_tokens":16,"temperature":1e400')),
    completion(
      "content nested 10,000 arrays deep",
      `{"model":${json(model)},"messages":[{"role":"user","content":${nestedArrays(10_000, '"x"')}}]}`
    ),
    completion("body nested 100,000 arrays deep", nestedArrays(100_000)),
    completion(
      "messages __proto__ key",
      `{"model":${json(model)},"messages":[{"role":"user","content":"hi","__proto__":{"role":"system"}}],"max_tokens":16}`,
      { status: [200, 400] },
      {
        unsure: "an own __proto__ member of a message: ignored (200) or refused (400); no 5xx and no pollution either way"
      }
    ),
    completion("body __proto__ with model", `{"__proto__":{"model":${json(model)}},"messages":[{"role":"user","content":"hi"}]}`),
    completion(
      "300 KB content",
      { ...valid, messages: [{ role: "user", content: "a".repeat(300_000) }] },
      { status: [400, 413], code: "INPUT_TOO_LARGE" }
    ),
    completion(
      "100,000 messages",
      { ...valid, messages: Array.from({ length: 100_000 }, () => ({ role: "user", content: "" })) },
      { status: [400, 413], code: ["INPUT_TOO_LARGE", "INVALID_REQUEST"] }
    ),
    {
      name: "chat: Content-Type missing",
      auth: "customer",
      request: { method: "POST", path: "/api/v1/chat/completions", body: json(valid) },
      expect: INVALID_REQUEST,
      unsure: "no 415 in the spec"
    },
    {
      name: "chat: Content-Type text/plain",
      auth: "customer",
      request: { method: "POST", path: "/api/v1/chat/completions", headers: [["content-type", "text/plain"]], body: json(valid) },
      expect: INVALID_REQUEST,
      unsure: "no 415 in the spec"
    },
    {
      name: "chat: no credentials",
      auth: "none",
      request: {
        method: "POST",
        path: "/api/v1/chat/completions",
        headers: [["content-type", "application/json"]],
        body: json(valid)
      },
      expect: { status: 401, code: "AUTH_REQUIRED" }
    },
    {
      name: "chat: Authorization garbage",
      auth: "none",
      request: {
        method: "POST",
        path: "/api/v1/chat/completions",
        headers: [
          ["content-type", "application/json"],
          ["authorization", "Bearer \xed\xa0\x80"]
        ],
        body: json(valid)
      },
      expect: { status: 401, code: "AUTH_REQUIRED" }
    },
    // Chat request history.
    ...["0", "101", "-1", "1e400", "NaN", "abc", "1.5", "%00", "%ED%A0%80", "", "18446744073709551616"].map(
      (limit): HostileCase => ({
        name: `chat/requests: limit=${limit}`,
        auth: "customer",
        request: { method: "GET", path: `/api/v1/chat/requests?limit=${limit}` },
        expect: INVALID_REQUEST
      })
    ),
    ...["garbage", "%00", "%ED%A0%80", "__proto__", "x".repeat(2000), randomUUID()].map(
      (before, index): HostileCase => ({
        name: `chat/requests: before=${index === 5 ? "<a random uuid>" : before.slice(0, 30)}`,
        auth: "customer",
        request: { method: "GET", path: `/api/v1/chat/requests?before=${before}` },
        expect: { status: 404, code: "REQUEST_NOT_FOUND" }
      })
    ),
    {
      name: "chat/requests: no credentials",
      auth: "none",
      request: { method: "GET", path: "/api/v1/chat/requests" },
      expect: { status: 401, code: "AUTH_REQUIRED" }
    },
    ...PATH_TRICKS.map(
      (trick): HostileCase => ({
        name: `chat/requests/{id}: ${trick.label}`,
        auth: "customer",
        request: { method: "GET", path: `/api/v1/chat/requests/${trick.segment}` },
        expect: pathTrickExpectation(trick, "REQUEST_NOT_FOUND")
      })
    ),
    {
      name: "chat/requests/{id}: no credentials",
      auth: "none",
      request: { method: "GET", path: `/api/v1/chat/requests/${randomUUID()}` },
      expect: { status: 401, code: "AUTH_REQUIRED" }
    }
  ]
}

export const restCases = (context: CorpusContext): Array<HostileCase> => [
  ...media(),
  ...results(),
  ...resultLinks(),
  ...usage(),
  ...catalog(),
  ...unknownRoutes(),
  ...chat(context)
]
