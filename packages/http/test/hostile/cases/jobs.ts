/**
 * POST /api/v1/jobs and GET /api/v1/jobs[/{id}]: generated cases (a NUL and each lone surrogate
 * half in every string position of every model's input, as GET /api/v1/models lists the
 * fields; unsafe media URLs in every media field) and written ones (envelopes, types, numbers,
 * prototype keys, nesting, sizes, headers, path tricks).
 */
import { randomUUID } from "node:crypto"
import type { HeaderList } from "../RawHttp.ts"
import {
  BAD_STRINGS,
  type HostileCase,
  HUGE_NUMBERS,
  json,
  nestedArrays,
  nestedObjects,
  PATH_TRICKS,
  pathTrickExpectation
} from "../Corpus.ts"
import { type CorpusContext, firstModel, type Model, validInputOf, validValueOf } from "./context.ts"

const JOBS = "/api/v1/jobs"

const jobHeaders = (key: string | null = randomUUID()): HeaderList => [
  ["content-type", "application/json"],
  ...(key === null ? [] : [["idempotency-key", key] as const])
]

/** A submission of a raw JSON body as the customer. */
const submission = (
  name: string,
  body: string,
  expect: HostileCase["expect"],
  extra: Partial<HostileCase> = {}
): HostileCase => ({
  name,
  auth: "customer",
  request: { method: "POST", path: JOBS, headers: jobHeaders(), body },
  expect,
  ...extra
})

const INVALID_INPUT = { status: 400, code: "INVALID_MODEL_INPUT" } as const
/** Numbers JSON.parse turns into integers: a price compare may refuse them as PRICE_CHANGED. */
const INTEGER_LIKE = ["-0", "2^53+1", "2^64", "1e-400"]
const INVALID_REQUEST = { status: 400, code: "INVALID_REQUEST" } as const

/** One case per hostile string per string position (field, or array item) of every model's input. */
const stringPositions = (models: ReadonlyArray<Model>): Array<HostileCase> =>
  models.flatMap((model) => {
    const valid = validInputOf(model)
    return model.fields.flatMap((field) =>
      BAD_STRINGS.flatMap(({ label, wrap }): Array<HostileCase> => {
        if (field.type === "integer") return []
        const value = validValueOf(field)
        const bad = Array.isArray(value)
          ? value.map((item, index) => (index === value.length - 1 ? wrap(String(item)) : item))
          : wrap(String(value))
        return [
          submission(
            `jobs: ${label} in ${model.slug} input.${field.name}${Array.isArray(value) ? "[last]" : ""}`,
            json({ model: model.slug, input: { ...valid, [field.name]: bad } }),
            INVALID_INPUT
          )
        ]
      })
    )
  })

/** A NUL and each lone surrogate in a key of the input object (an unknown field either way). */
const keyPositions = (model: Model): Array<HostileCase> =>
  BAD_STRINGS.map(({ label, wrap }) =>
    submission(
      `jobs: ${label} in an input key (${model.slug})`,
      json({ model: model.slug, input: { ...validInputOf(model), [wrap("prompt")]: "x" } }),
      INVALID_INPUT
    )
  )

/** Addresses a media URL must not name: the service would fetch them (or hand them to an upstream). */
export const UNSAFE_MEDIA_URLS: ReadonlyArray<string> = [
  "https://169.254.169.254/latest/meta-data/",
  "https://127.0.0.1/a.png",
  "https://127.1/a.png",
  "https://2130706433/a.png",
  "https://0x7f000001/a.png",
  "https://[::1]/a.png",
  "https://[::ffff:127.0.0.1]/a.png",
  "https://localhost/a.png",
  "https://LOCALHOST./a.png",
  "https://10.0.0.1/a.png",
  "https://172.16.0.1/a.png",
  "https://192.168.1.1/a.png",
  "https://0.0.0.0/a.png",
  "https://[fe80::1]/a.png",
  "https://[fd00::1]/a.png",
  "https://user:pass@example.com/a.png",
  "https://user@example.com/a.png"
]

/** Each unsafe URL in one media field of each kind (imageUrls, imageUrl, firstFrameUrl, lastFrameUrl, videoUrl). */
const unsafeMedia = (models: ReadonlyArray<Model>): Array<HostileCase> => {
  const seen = new Set<string>()
  const cases: Array<HostileCase> = []
  for (const model of models) {
    for (const field of model.fields.filter((each) => each.media)) {
      if (seen.has(field.name)) continue
      seen.add(field.name)
      for (const url of UNSAFE_MEDIA_URLS) {
        const value =
          field.type === "array" ? (validValueOf(field) as Array<string>).map((item, i) => (i === 0 ? url : item)) : url
        cases.push(
          submission(
            `jobs: media URL ${url} in ${model.slug} input.${field.name}`,
            json({ model: model.slug, input: { ...validInputOf(model), [field.name]: value } }),
            INVALID_INPUT
          )
        )
      }
    }
  }
  return cases
}

export const jobsCases = (context: CorpusContext): Array<HostileCase> => {
  const text = firstModel(context, (m) => m.slug === "alpha-2-lite-text-to-image-economy")
  const media = firstModel(
    context,
    (m) => m.fields.some((f) => f.type === "array" && f.media) && m.fields.some((f) => f.name === "prompt")
  )
  const integer = firstModel(context, (m) => m.fields.some((f) => f.type === "integer"))
  const intField = integer.fields.find((f) => f.type === "integer")!.name
  const slug = text.slug
  const input = validInputOf(text)
  const validBody = json({ model: slug, input })
  const withInput = (rawInput: string) => `{"model":${json(slug)},"input":${rawInput}}`

  const envelopes: Array<HostileCase> = [
    ...[
      "",
      "{",
      '{"model":',
      "null",
      "[]",
      "42",
      '"text"',
      "true",
      '[{"model":"x"}]',
      '{"model":"a"}garbage',
      "\u0000",
      "\ufeff{}"
    ].map((body) => submission(`jobs: body ${json(body)}`, body, INVALID_REQUEST)),
    submission("jobs: model missing", json({ input }), INVALID_REQUEST),
    submission(
      "jobs: input missing",
      json({ model: slug }),
      { status: 400, code: ["INVALID_REQUEST", "INVALID_MODEL_INPUT"] },
      {
        unsure: "input is a required value (INVALID_REQUEST) and the model's schema needs it (INVALID_MODEL_INPUT): both accepted"
      }
    ),
    submission("jobs: body {}", "{}", INVALID_REQUEST),
    ...[
      ["42", "a number"],
      ["null", "null"],
      ["[]", "an array"],
      ["{}", "an object"],
      ["true", "a boolean"],
      [json([slug]), "an array of the slug"]
    ].map(([raw, label]) => submission(`jobs: model is ${label}`, `{"model":${raw},"input":${json(input)}}`, INVALID_REQUEST)),
    ...[
      ["42", "a number"],
      ["null", "null"],
      ["[]", "an array"],
      ['"prompt"', "a string"],
      ["true", "a boolean"],
      [json([input]), "an array of the input"]
    ].map(([raw, label]) =>
      submission(
        `jobs: input is ${label}`,
        withInput(raw!),
        { status: 400, code: ["INVALID_REQUEST", "INVALID_MODEL_INPUT"] },
        {
          unsure:
            "input of the wrong type: the spec's INVALID_REQUEST (a required value) and INVALID_MODEL_INPUT (violates the schema) both fit"
        }
      )
    ),
    ...BAD_STRINGS.map(({ label, wrap }) =>
      submission(
        `jobs: ${label} in the model slug`,
        json({ model: wrap(slug), input }),
        { status: [400, 404], code: ["INVALID_REQUEST", "MODEL_NOT_FOUND"] },
        {
          unsure: "a slug with NUL names no model (404 MODEL_NOT_FOUND) or is a malformed value (400 INVALID_REQUEST)"
        }
      )
    ),
    ...[
      "__proto__",
      "constructor",
      "prototype",
      "toString",
      "hasOwnProperty",
      "valueOf",
      "",
      " ",
      "a".repeat(10_000),
      "../alpha-2-lite-text-to-image-economy",
      `${slug} `,
      slug.toUpperCase()
    ].map((model) =>
      submission(
        `jobs: model ${json(model.length > 50 ? `${model.slice(0, 20)}… (${model.length})` : model)}`,
        json({ model, input }),
        { status: [400, 404], code: ["MODEL_NOT_FOUND", "INVALID_REQUEST"] }
      )
    ),
    ...BAD_STRINGS.map(({ label, wrap }) =>
      submission(
        `jobs: ${label} in a top-level key`,
        `{"model":${json(slug)},"input":${json(input)},${json(wrap("model"))}:"x"}`,
        { status: [202, 400] },
        {
          unsure:
            "the spec rejects unknown fields of input, not of the body; an unknown top-level key may be ignored (202) or refused (400)"
        }
      )
    )
  ]

  const prototypeKeys: Array<HostileCase> = [
    ...["__proto__", "constructor", "prototype"].flatMap((key) => [
      submission(
        `jobs: input key ${key} (object)`,
        withInput(`{"prompt":"x",${json(key)}:{"polluted":true,"prompt":"y"}}`),
        INVALID_INPUT
      ),
      submission(`jobs: input key ${key} (string)`, withInput(`{"prompt":"x",${json(key)}:"y"}`), INVALID_INPUT),
      submission(`jobs: input key ${key} (null)`, withInput(`{"prompt":"x",${json(key)}:null}`), INVALID_INPUT)
    ]),
    submission("jobs: input only {__proto__: {prompt}}", withInput(`{"__proto__":{"prompt":"x"}}`), INVALID_INPUT),
    submission("jobs: body {__proto__: {model, input}}", `{"__proto__":${validBody}}`, INVALID_REQUEST),
    submission(
      "jobs: body with constructor.prototype",
      `{"model":${json(slug)},"input":${json(input)},"constructor":{"prototype":{"polluted":true}}}`,
      { status: [202, 400] },
      {
        unsure: "an unknown top-level key: ignored (202) or refused (400); what matters is no 5xx and no pollution"
      }
    ),
    submission(
      "jobs: expectedPriceMicros as {__proto__}",
      `{"model":${json(slug)},"input":${json(input)},"expectedPriceMicros":{"__proto__":1}}`,
      INVALID_REQUEST
    )
  ]

  const numbers: Array<HostileCase> = [
    ...HUGE_NUMBERS.map(({ label, raw }) =>
      submission(
        `jobs: expectedPriceMicros ${label}`,
        `{"model":${json(slug)},"input":${json(input)},"expectedPriceMicros":${raw}}`,
        INTEGER_LIKE.includes(label) ? { status: [400, 409], code: ["INVALID_REQUEST", "PRICE_CHANGED"] } : INVALID_REQUEST,
        INTEGER_LIKE.includes(label)
          ? {
              unsure:
                "JSON.parse reads it as an integer (-0 and 1e-400 as 0) the price never equals: 400 (unsafe or not meant) or 409 PRICE_CHANGED"
            }
          : {}
      )
    ),
    ...HUGE_NUMBERS.map(({ label, raw }) =>
      submission(
        `jobs: ${integer.slug} input.${intField} ${label}`,
        `{"model":${json(integer.slug)},"input":${json({ ...validInputOf(integer), [intField]: "__N__" }).replace('"__N__"', raw)}}`,
        INVALID_INPUT
      )
    ),
    submission(
      `jobs: ${integer.slug} input.${intField} as a numeric string`,
      json({ model: integer.slug, input: { ...validInputOf(integer), [intField]: "6" } }),
      INVALID_INPUT
    ),
    submission(`jobs: prompt is 1e400`, withInput(`{"prompt":1e400}`), INVALID_INPUT)
  ]

  const wrongTypes: Array<HostileCase> = [
    ...[
      ["42", "a number"],
      ["null", "null"],
      ["[]", "an array"],
      ["{}", "an object"],
      ["true", "a boolean"],
      ['["x"]', "an array of a string"]
    ].map(([raw, label]) => submission(`jobs: prompt is ${label}`, withInput(`{"prompt":${raw}}`), INVALID_INPUT)),
    ...[
      ['"https://images.example.com/a.png"', "a string"],
      ["[42]", "[number]"],
      ["[null]", "[null]"],
      [`[["https://images.example.com/a.png"]]`, "a nested array"],
      ["{}", "an object"],
      [`[{"url":"https://images.example.com/a.png"}]`, "[object]"],
      [json(Array.from({ length: 1000 }, () => "https://images.example.com/a.png")), "1000 items"]
    ].map(([raw, label]) =>
      submission(
        `jobs: ${media.slug} imageUrls is ${label}`,
        `{"model":${json(media.slug)},"input":${json({ ...validInputOf(media), imageUrls: "__V__" }).replace('"__V__"', raw!)}}`,
        INVALID_INPUT
      )
    ),
    submission(
      "jobs: media reference with NUL",
      json({ model: media.slug, input: { ...validInputOf(media), imageUrls: [`media:${randomUUID()}\u0000`] } }),
      INVALID_INPUT
    ),
    submission(
      "jobs: media reference to nothing (upper case)",
      json({ model: media.slug, input: { ...validInputOf(media), imageUrls: [`media:${randomUUID().toUpperCase()}`] } }),
      INVALID_INPUT
    ),
    ...[
      "http://images.example.com/a.png",
      "file:///etc/passwd",
      "data:image/png;base64,AAAA",
      "javascript:alert(1)",
      "https://",
      "https:///a.png",
      "https://exa mple.com/a.png",
      "//images.example.com/a.png",
      "HTTPS://images.example.com/a.png\u0000"
    ].map((url) =>
      submission(
        `jobs: imageUrls item ${json(url)}`,
        json({ model: media.slug, input: { ...validInputOf(media), imageUrls: [url] } }),
        INVALID_INPUT
      )
    )
  ]

  const nesting: Array<HostileCase> = [
    submission("jobs: prompt nested 10,000 arrays deep", withInput(`{"prompt":${nestedArrays(10_000)}}`), INVALID_INPUT),
    submission(
      "jobs: unknown field nested 10,000 objects deep",
      withInput(`{"prompt":"x","deep":${nestedObjects(10_000)}}`),
      INVALID_INPUT
    ),
    submission("jobs: input nested 10,000 arrays deep", withInput(nestedArrays(10_000)), {
      status: 400,
      code: ["INVALID_MODEL_INPUT", "INVALID_REQUEST"]
    }),
    submission("jobs: body nested 10,000 arrays deep", nestedArrays(10_000), INVALID_REQUEST),
    submission("jobs: body nested 100,000 arrays deep (200 KB)", nestedArrays(100_000), INVALID_REQUEST),
    submission(
      "jobs: expectedPriceMicros nested 30,000 objects deep",
      `{"model":${json(slug)},"input":${json(input)},"expectedPriceMicros":${nestedObjects(30_000)}}`,
      INVALID_REQUEST
    )
  ]

  const sizes: Array<HostileCase> = [
    submission("jobs: 300 KB prompt", json({ model: slug, input: { prompt: "a".repeat(300_000) } }), {
      status: [400, 413],
      code: "INPUT_TOO_LARGE"
    }),
    submission("jobs: 300 KB of garbage", "x".repeat(300_000), { status: [400, 413], code: "INPUT_TOO_LARGE" }),
    submission("jobs: 2 MB body", json({ model: slug, input: { prompt: "a".repeat(2_000_000) } }), {
      status: [400, 413],
      code: "INPUT_TOO_LARGE"
    }),
    {
      name: "jobs: 300 KB chunked body (no Content-Length)",
      auth: "customer",
      request: {
        method: "POST",
        path: JOBS,
        headers: [...jobHeaders(), ["transfer-encoding", "chunked"]],
        body: (() => {
          const data = json({ model: slug, input: { prompt: "a".repeat(300_000) } })
          return `${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n0\r\n\r\n`
        })(),
        noContentLength: true
      },
      expect: { status: [400, 413], code: "INPUT_TOO_LARGE" }
    },
    {
      name: "jobs: Content-Length 10 MB, 10 bytes sent",
      auth: "customer",
      request: { method: "POST", path: JOBS, headers: [...jobHeaders(), ["content-length", "10000000"]], body: '{"model":' },
      expect: { status: [400, 413], code: "INPUT_TOO_LARGE" },
      timeoutMs: 5_000
    }
  ]

  /** A valid submission with `headers`, and Content-Type: application/json unless they name a Content-Type (or `json` is false). */
  const idem = (
    name: string,
    headers: HeaderList,
    expect: HostileCase["expect"],
    extra: Partial<HostileCase> = {},
    json = true
  ): HostileCase => ({
    name,
    auth: "customer",
    request: {
      method: "POST",
      path: JOBS,
      headers:
        json && !headers.some(([header]) => header.toLowerCase() === "content-type")
          ? [["content-type", "application/json"], ...headers]
          : headers,
      body: validBody
    },
    expect,
    ...extra
  })
  const BAD_KEY = { status: 400, code: "INVALID_IDEMPOTENCY_KEY" } as const
  // Header bytes Node's HTTP parser refuses itself (NUL, other controls, DEL): a plain 400 before any route.
  const PARSER_REFUSAL = { status: 400 } as const
  const headers: Array<HostileCase> = [
    idem("jobs: Idempotency-Key missing", [], BAD_KEY),
    idem("jobs: Idempotency-Key empty", [["idempotency-key", ""]], BAD_KEY),
    idem("jobs: Idempotency-Key of 129 characters", [["idempotency-key", "k".repeat(129)]], BAD_KEY),
    idem("jobs: Idempotency-Key of 10,000 characters", [["idempotency-key", "k".repeat(10_000)]], BAD_KEY),
    idem("jobs: Idempotency-Key with a tab", [["idempotency-key", "key\twith-tab"]], BAD_KEY),
    idem("jobs: Idempotency-Key with latin-1 é", [["idempotency-key", "clé-é"]], BAD_KEY),
    idem(
      "jobs: Idempotency-Key in UTF-8 (Cyrillic)",
      [["idempotency-key", Buffer.from("ключ", "utf8").toString("latin1")]],
      BAD_KEY
    ),
    idem("jobs: Idempotency-Key with a UTF-8 encoded lone surrogate", [["idempotency-key", "key\xed\xa0\x80"]], BAD_KEY),
    idem("jobs: Idempotency-Key with byte 0x80", [["idempotency-key", "key\x80"]], BAD_KEY),
    idem("jobs: Idempotency-Key with NUL (raw byte)", [["idempotency-key", "key\u0000x"]], PARSER_REFUSAL),
    idem("jobs: Idempotency-Key with 0x01 (raw byte)", [["idempotency-key", "key\u0001x"]], PARSER_REFUSAL),
    idem("jobs: Idempotency-Key with DEL (raw byte)", [["idempotency-key", "key\u007fx"]], PARSER_REFUSAL),
    idem("jobs: Idempotency-Key with ESC (raw byte)", [["idempotency-key", "key\u001b[31m"]], PARSER_REFUSAL),
    idem(
      "jobs: Idempotency-Key twice, different values",
      [
        ["idempotency-key", "first-key"],
        ["idempotency-key", "second-key"]
      ],
      BAD_KEY,
      {
        unsure:
          'two Idempotency-Key headers: Node joins them into "first-key, second-key", a printable 1-128 string; refusing the ambiguity is the hardened reading'
      }
    ),
    idem(
      "jobs: Content-Type missing",
      [["idempotency-key", randomUUID()]],
      INVALID_REQUEST,
      {
        unsure: "the spec requires Content-Type: application/json and has no 415; INVALID_REQUEST is its nearest code"
      },
      false
    ),
    idem(
      "jobs: Content-Type text/plain",
      [
        ["content-type", "text/plain"],
        ["idempotency-key", randomUUID()]
      ],
      INVALID_REQUEST,
      {
        unsure: "as above: the body is not declared JSON"
      }
    ),
    idem(
      "jobs: Content-Type with a lone surrogate (UTF-8 bytes)",
      [
        ["content-type", "application/json; charset=\xed\xa0\x80"],
        ["idempotency-key", randomUUID()]
      ],
      { status: [202, 400] },
      {
        unsure: "a charset parameter nobody reads: accepting the JSON or refusing it are both defensible"
      }
    ),
    idem(
      "jobs: Content-Type with NUL (raw byte)",
      [
        ["content-type", "application/json\u0000"],
        ["idempotency-key", randomUUID()]
      ],
      PARSER_REFUSAL
    ),
    idem(
      "jobs: Content-Type twice (json, text/plain)",
      [
        ["content-type", "application/json"],
        ["content-type", "text/plain"],
        ["idempotency-key", randomUUID()]
      ],
      { status: [202, 400] },
      {
        unsure:
          "Node keeps the first Content-Type of a duplicate: 202 follows; a 400 would also be right (RFC 9110 forbids the duplicate)"
      }
    )
  ]

  const noAuth = (name: string, method: string, path: string, authHeaders: HeaderList = []): HostileCase => ({
    name,
    auth: "none",
    request: { method, path, headers: [...jobHeaders(), ...authHeaders], ...(method === "POST" ? { body: validBody } : {}) },
    expect: { status: 401, code: "AUTH_REQUIRED" }
  })
  const auth: Array<HostileCase> = [
    noAuth("jobs POST: no credentials", "POST", JOBS),
    noAuth("jobs GET: no credentials", "GET", JOBS),
    noAuth("jobs/{id}: no credentials", "GET", `${JOBS}/${context.otherJobId}`),
    noAuth('jobs POST: Authorization "Bearer"', "POST", JOBS, [["authorization", "Bearer"]]),
    noAuth('jobs POST: Authorization "Bearer " (empty token)', "POST", JOBS, [["authorization", "Bearer "]]),
    noAuth("jobs POST: Authorization Basic", "POST", JOBS, [["authorization", "Basic dXNlcjpwYXNz"]]),
    noAuth("jobs POST: Authorization garbage key", "POST", JOBS, [["authorization", "Bearer tm_not-a-key"]]),
    noAuth("jobs POST: Authorization of 8,000 characters", "POST", JOBS, [["authorization", `Bearer tm_${"x".repeat(8_000)}`]]),
    noAuth("jobs POST: Authorization with a UTF-8 lone surrogate", "POST", JOBS, [["authorization", "Bearer tm_\xed\xa0\x80"]]),
    noAuth("jobs POST: Authorization with two tokens", "POST", JOBS, [["authorization", "Bearer tm_a tm_b"]]),
    noAuth("jobs GET: x-api-key garbage", "GET", JOBS, [["x-api-key", "tm_garbage"]]),
    noAuth("jobs GET: x-api-key with latin-1 bytes", "GET", JOBS, [["x-api-key", "tm_\xe9\xff"]]),
    {
      name: "jobs POST: Authorization with NUL (raw byte)",
      auth: "none",
      request: { method: "POST", path: JOBS, headers: [...jobHeaders(), ["authorization", "Bearer tm_\u0000"]], body: validBody },
      expect: PARSER_REFUSAL
    }
  ]

  const paths: Array<HostileCase> = [
    ...PATH_TRICKS.map(
      (trick): HostileCase => ({
        name: `jobs/{id}: ${trick.label}`,
        auth: "customer",
        request: { method: "GET", path: `${JOBS}/${trick.segment}` },
        expect: pathTrickExpectation(trick, "JOB_NOT_FOUND")
      })
    ),
    {
      name: "jobs/{id}: another customer's task",
      auth: "customer",
      request: { method: "GET", path: `${JOBS}/${context.otherJobId}` },
      expect: { status: 404, code: "JOB_NOT_FOUND" }
    },
    {
      name: "jobs/{id}: the id with a trailing %00",
      auth: "other",
      request: { method: "GET", path: `${JOBS}/${context.otherJobId}%00` },
      expect: { status: 404, code: "JOB_NOT_FOUND" }
    },
    {
      name: "jobs/{id}: the id upper-cased",
      auth: "other",
      request: { method: "GET", path: `${JOBS}/${context.otherJobId.toUpperCase()}` },
      expect: { status: [200, 404] },
      unsure: "ids may or may not be case-insensitive; only no 5xx matters"
    },
    {
      name: "jobs/{id}: id of 20,000 characters (request line past Node's header limit)",
      auth: "customer",
      request: { method: "GET", path: `${JOBS}/${"a".repeat(20_000)}` },
      expect: { status: [404, 414, 431] }
    },
    ...[
      ["jobs: double slash //api/v1/jobs", "//api/v1/jobs"],
      ["jobs: /api/v1//jobs", "/api/v1//jobs"],
      ["jobs/{id}: empty id (trailing slash)", `${JOBS}/`]
    ].map(
      ([name, path]): HostileCase => ({
        name: name!,
        auth: "customer",
        request: { method: "GET", path: path! },
        expect: { status: [200, 404] },
        unsure:
          "the router collapses empty segments and serves the caller's own task list: no bypass; a strict 404 would be fine too"
      })
    ),
    {
      name: "jobs/{id}: id with a query of NUL",
      auth: "customer",
      request: { method: "GET", path: `${JOBS}/${context.otherJobId}?x=%00` },
      expect: { status: 404, code: "JOB_NOT_FOUND" }
    },
    {
      name: "jobs GET: query with NUL and surrogates",
      auth: "customer",
      request: { method: "GET", path: `${JOBS}?limit=%00&status=%ED%A0%80&__proto__=1` },
      expect: { status: [200, 400] }
    },
    {
      name: "jobs: PUT /api/v1/jobs",
      auth: "customer",
      request: { method: "PUT", path: JOBS, headers: jobHeaders(), body: validBody },
      expect: { status: [404, 405], errorBody: true }
    },
    {
      name: "jobs/{id}: DELETE",
      auth: "customer",
      request: { method: "DELETE", path: `${JOBS}/${context.otherJobId}` },
      expect: { status: [404, 405], errorBody: true }
    }
  ]

  return [
    ...stringPositions(context.models),
    ...keyPositions(text),
    ...keyPositions(media),
    ...unsafeMedia(context.models),
    ...envelopes,
    ...prototypeKeys,
    ...numbers,
    ...wrongTypes,
    ...nesting,
    ...sizes,
    ...headers,
    ...auth,
    ...paths
  ]
}
