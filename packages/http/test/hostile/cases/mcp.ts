/**
 * /mcp: the resource server's refusals (credentials, Origin), JSON-RPC envelopes the SDK must
 * refuse, and tool calls with hostile arguments, each of which must be an error (a JSON-RPC
 * error or a tool result with isError), never a 5xx.
 */
import { randomUUID } from "node:crypto"
import type { HeaderList } from "../RawHttp.ts"
import { BAD_STRINGS, type HostileCase, HUGE_NUMBERS, json, nestedArrays, nestedObjects } from "../Corpus.ts"
import { UNSAFE_MEDIA_URLS } from "./jobs.ts"

const MCP_HEADERS: HeaderList = [
  ["content-type", "application/json"],
  ["accept", "application/json, text/event-stream"],
  ["mcp-protocol-version", "2025-11-25"]
]

const rpc = (
  name: string,
  body: string | unknown,
  expect: HostileCase["expect"] = { status: [200, 400], mcpError: true },
  headers: HeaderList = MCP_HEADERS,
  extra: Partial<HostileCase> = {}
): HostileCase => ({
  name: `mcp: ${name}`,
  auth: "customer",
  request: { method: "POST", path: "/mcp", headers, body: typeof body === "string" ? body : json(body) },
  expect,
  ...extra
})

let id = 0
const call = (tool: string, args: unknown) => ({
  jsonrpc: "2.0",
  id: ++id,
  method: "tools/call",
  params: { name: tool, arguments: args }
})

const toolError = (code?: string | ReadonlyArray<string>): HostileCase["expect"] => ({
  status: [200, 400],
  mcpError: true,
  ...(code === undefined ? {} : { toolCode: code })
})

const MODEL = "alpha-2-lite-text-to-image-economy"
const MEDIA_MODEL = "alpha-2-lite-image-to-image-economy"
const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "hostile", version: "1" } }
}

export const mcpCases = (): Array<HostileCase> => [
  // The resource server.
  {
    name: "mcp: no credentials",
    auth: "none",
    request: { method: "POST", path: "/mcp", headers: MCP_HEADERS, body: json(initialize) },
    expect: { status: 401, code: "AUTH_REQUIRED" }
  },
  {
    name: "mcp: Authorization garbage",
    auth: "none",
    request: {
      method: "POST",
      path: "/mcp",
      headers: [...MCP_HEADERS, ["authorization", "Bearer garbage"]],
      body: json(initialize)
    },
    expect: { status: 401, code: "AUTH_REQUIRED" }
  },
  {
    name: "mcp: Authorization with a UTF-8 lone surrogate",
    auth: "none",
    request: {
      method: "POST",
      path: "/mcp",
      headers: [...MCP_HEADERS, ["authorization", "Bearer \xed\xa0\x80"]],
      body: json(initialize)
    },
    expect: { status: 401, code: "AUTH_REQUIRED" }
  },
  {
    name: "mcp: Authorization NUL (raw byte)",
    auth: "none",
    request: {
      method: "POST",
      path: "/mcp",
      headers: [...MCP_HEADERS, ["authorization", "Bearer tm_\u0000"]],
      body: json(initialize)
    },
    expect: { status: 400 }
  },
  {
    name: "mcp: Origin https://evil.example.com with a valid key",
    auth: "customer",
    request: {
      method: "POST",
      path: "/mcp",
      headers: [...MCP_HEADERS, ["origin", "https://evil.example.com"]],
      body: json(initialize)
    },
    expect: { status: 403 }
  },
  {
    name: "mcp: Origin null with a valid key",
    auth: "customer",
    request: { method: "POST", path: "/mcp", headers: [...MCP_HEADERS, ["origin", "null"]], body: json(initialize) },
    expect: { status: 403 },
    unsure: "the opaque origin of a sandboxed page or file: is not ours either"
  },
  {
    name: "mcp: GET /mcp/..%2fadmin",
    auth: "customer",
    request: { method: "GET", path: "/mcp/..%2fadmin" },
    expect: { status: 404, errorBody: true }
  },
  // Envelopes.
  rpc("body not JSON", "{", { status: 400, mcpError: true }),
  rpc("body empty", "", { status: 400, mcpError: true }),
  rpc("body null", "null", { status: 400, mcpError: true }),
  rpc("body 42", "42", { status: 400, mcpError: true }),
  rpc("empty batch []", "[]", { status: 400, mcpError: true }),
  rpc("body {}", "{}", { status: 400, mcpError: true }),
  rpc("jsonrpc 1.0", { jsonrpc: "1.0", id: 1, method: "tools/list" }, { status: 400, mcpError: true }),
  rpc("method missing", { jsonrpc: "2.0", id: 1 }, { status: 400, mcpError: true }),
  rpc("method 42", { jsonrpc: "2.0", id: 1, method: 42 }, { status: 400, mcpError: true }),
  rpc("id an object", { jsonrpc: "2.0", id: { a: 1 }, method: "tools/list" }, { status: 400, mcpError: true }),
  rpc("params a string", { jsonrpc: "2.0", id: 1, method: "tools/list", params: "x" }, { status: [200, 400], mcpError: true }),
  ...BAD_STRINGS.map(({ label, wrap }) => rpc(`${label} in method`, { jsonrpc: "2.0", id: 1, method: wrap("tools/list") })),
  ...BAD_STRINGS.map(({ label, wrap }) =>
    rpc(`${label} in a string id`, {
      jsonrpc: "2.0",
      id: wrap("id"),
      method: "tools/call",
      params: { name: "nope", arguments: {} }
    })
  ),
  rpc("method __proto__", { jsonrpc: "2.0", id: 1, method: "__proto__" }),
  rpc("method constructor", { jsonrpc: "2.0", id: 1, method: "constructor" }),
  rpc(
    "params nested 10,000 deep",
    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_balance","arguments":{"x":${nestedArrays(10_000)}}}}`,
    { status: [200, 400] },
    MCP_HEADERS,
    {
      unsure: "get_balance ignores an unknown argument: a balance or a refusal are both fine; only no 5xx is asserted"
    }
  ),
  rpc("body nested 100,000 deep", nestedArrays(100_000), { status: 400, mcpError: true }),
  rpc("300 KB body", call("search_models", { query: "q".repeat(300_000) }), { status: [400, 413] }),
  rpc("Content-Type text/plain", json(initialize), { status: [400, 415] }, [
    ["content-type", "text/plain"],
    ["accept", "application/json, text/event-stream"]
  ]),
  rpc("Accept missing", json(initialize), { status: [400, 406] }, [["content-type", "application/json"]]),
  rpc("mcp-protocol-version garbage", json(call("get_balance", {})), { status: 400 }, [
    ["content-type", "application/json"],
    ["accept", "application/json, text/event-stream"],
    ["mcp-protocol-version", "\xed\xa0\x80"]
  ]),
  // Tool calls with hostile arguments.
  ...["nope", "__proto__", "constructor", "toString", "", "get_balance\u0000", "get_balance\ud800"].map((tool) =>
    rpc(`tool ${json(tool)}`, call(tool, {}))
  ),
  rpc("tools/call without arguments object (null)", call("get_task", null)),
  rpc("tools/call arguments []", call("get_task", [])),
  rpc("tools/call arguments a string", call("get_task", "x")),
  ...BAD_STRINGS.flatMap(({ label, wrap }) => [
    rpc(
      `create_task: ${label} in input.prompt`,
      call("create_task", { model: MODEL, input: { prompt: wrap("a lighthouse") } }),
      toolError("INVALID_MODEL_INPUT")
    ),
    rpc(
      `create_task: ${label} in an input key`,
      call("create_task", { model: MODEL, input: { prompt: "a lighthouse", [wrap("prompt")]: "x" } }),
      toolError("INVALID_MODEL_INPUT")
    ),
    rpc(
      `create_task: ${label} in imageUrls[0]`,
      call("create_task", {
        model: MEDIA_MODEL,
        input: { prompt: "a lighthouse", imageUrls: [wrap("https://images.example.com/a.png")] }
      }),
      toolError("INVALID_MODEL_INPUT")
    ),
    rpc(
      `create_task: ${label} in model`,
      call("create_task", { model: wrap(MODEL), input: { prompt: "a lighthouse" } }),
      toolError(["MODEL_NOT_FOUND", "INVALID_REQUEST"])
    ),
    rpc(
      `create_task: ${label} in idempotencyKey`,
      call("create_task", { model: MODEL, input: { prompt: "a lighthouse" }, idempotencyKey: wrap("key") }),
      toolError("INVALID_IDEMPOTENCY_KEY")
    ),
    rpc(
      `get_task: ${label} in id`,
      call("get_task", { id: wrap(randomUUID()) }),
      toolError(["JOB_NOT_FOUND", "INVALID_REQUEST"])
    ),
    rpc(
      `wait_for_task: ${label} in id`,
      call("wait_for_task", { id: wrap(randomUUID()), timeoutSeconds: 1 }),
      toolError(["JOB_NOT_FOUND", "INVALID_REQUEST"])
    ),
    rpc(`search_models: ${label} in query`, call("search_models", { query: wrap("image") }), toolError("INVALID_REQUEST")),
    rpc(`search_models: ${label} in category`, call("search_models", { category: wrap("image") }), toolError("INVALID_REQUEST")),
    rpc(
      `get_model: ${label} in model`,
      call("get_model", { model: wrap(MODEL) }),
      toolError(["MODEL_NOT_FOUND", "INVALID_REQUEST"])
    ),
    rpc(
      `get_model: ${label} in input.prompt`,
      call("get_model", { model: MODEL, input: { prompt: wrap("x") } }),
      toolError("INVALID_MODEL_INPUT")
    ),
    rpc(`list_tasks: ${label} in status`, call("list_tasks", { status: wrap("queued") }), toolError("INVALID_REQUEST"))
  ]),
  ...["__proto__", "constructor", "prototype"].map((key) =>
    rpc(
      `create_task: input key ${key}`,
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_task","arguments":{"model":${json(MODEL)},"input":{"prompt":"x",${json(key)}:{"polluted":true}}}}}`,
      toolError("INVALID_MODEL_INPUT")
    )
  ),
  rpc(
    "create_task: arguments {__proto__: {model, input}}",
    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_task","arguments":{"__proto__":{"model":${json(MODEL)},"input":{"prompt":"x"}}}}}`
  ),
  ...["__proto__", "constructor"].map((model) =>
    rpc(`get_model: model ${model}`, call("get_model", { model }), toolError(["MODEL_NOT_FOUND", "INVALID_REQUEST"]))
  ),
  ...["__proto__", "constructor"].map((model) =>
    rpc(
      `create_task: model ${model}`,
      call("create_task", { model, input: { prompt: "x" } }),
      toolError(["MODEL_NOT_FOUND", "INVALID_REQUEST"])
    )
  ),
  ...UNSAFE_MEDIA_URLS.slice(0, 8).map((url) =>
    rpc(
      `create_task: imageUrls ${url}`,
      call("create_task", { model: MEDIA_MODEL, input: { prompt: "a lighthouse", imageUrls: [url] } }),
      toolError("INVALID_MODEL_INPUT")
    )
  ),
  rpc(
    "create_task: idempotencyKey of 129 characters",
    call("create_task", { model: MODEL, input: { prompt: "x" }, idempotencyKey: "k".repeat(129) }),
    toolError("INVALID_IDEMPOTENCY_KEY")
  ),
  rpc(
    "create_task: input nested 10,000 deep",
    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_task","arguments":{"model":${json(MODEL)},"input":{"prompt":${nestedObjects(10_000)}}}}}`,
    toolError("INVALID_MODEL_INPUT")
  ),
  rpc("create_task: input an array", call("create_task", { model: MODEL, input: [] })),
  ...HUGE_NUMBERS.map(({ label, raw }) =>
    rpc(
      `create_task: expectedPriceMicros ${label}`,
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_task","arguments":{"model":${json(MODEL)},"input":{"prompt":"x"},"idempotencyKey":${json(randomUUID())},"expectedPriceMicros":${raw}}}}`,
      toolError(
        ["-0", "1e-400"].includes(label) || label.startsWith("2^") ? ["INVALID_REQUEST", "PRICE_CHANGED"] : "INVALID_REQUEST"
      )
    )
  ),
  ...HUGE_NUMBERS.map(({ label, raw }) =>
    rpc(
      `wait_for_task: timeoutSeconds ${label}`,
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for_task","arguments":{"id":${json(randomUUID())},"timeoutSeconds":${raw}}}}`,
      toolError(["INVALID_REQUEST", "JOB_NOT_FOUND"])
    )
  ),
  ...["1e400", "-0", "0", "101", '"5"'].map((raw) =>
    rpc(
      `list_tasks: limit ${raw}`,
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_tasks","arguments":{"limit":${raw}}}}`,
      toolError("INVALID_REQUEST")
    )
  ),
  rpc("search_models: query of 201 characters", call("search_models", { query: "q".repeat(201) }), toolError("INVALID_REQUEST")),
  rpc("get_task: id ../", call("get_task", { id: "../usage" }), toolError(["JOB_NOT_FOUND", "INVALID_REQUEST"])),
  rpc(
    "get_task: id of 10,000 characters",
    call("get_task", { id: "a".repeat(10_000) }),
    toolError(["JOB_NOT_FOUND", "INVALID_REQUEST"])
  ),
  rpc(
    "get_balance: argument __proto__",
    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_balance","arguments":{"__proto__":{"x":1}}}}`,
    { status: [200, 400] },
    MCP_HEADERS,
    {
      unsure: "an own __proto__ member in empty arguments: ignored (a balance) or refused; only no 5xx is asserted"
    }
  ),
  rpc("resources/read with a hostile uri", {
    jsonrpc: "2.0",
    id: 1,
    method: "resources/read",
    params: { uri: "file:///etc/passwd\u0000" }
  }),
  rpc("prompts/get __proto__", { jsonrpc: "2.0", id: 1, method: "prompts/get", params: { name: "__proto__" } })
]
