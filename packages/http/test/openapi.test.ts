import { Validator } from "@seriousme/openapi-schema-validator"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Catalog, Errors, PaymentWebhook, WebhookEvent } from "@taskmeter/kernel"
import * as ChatWire from "../src/api/ChatWire.ts"
import * as WebhookBodies from "../src/api/WebhookBodies.ts"
import * as OpenApiDocument from "../src/OpenApiDocument.ts"
import * as Chat from "./chat/ChatTestServer.ts"
import * as T from "./support/TestServer.ts"

const fetchDocument = Effect.map(T.call("/api/openapi.json"), (reply) => reply.body)

const operations = (document: any): Array<{ path: string; method: string; operation: any }> =>
  Object.entries<any>(document.paths).flatMap(([path, item]) =>
    Object.entries<any>(item).map(([method, operation]) => ({ path, method, operation }))
  )

/** A served body decoded with the schema the document shows for it, members it does not list included. */
const conforms = <A, I>(schema: Schema.Codec<A, I>, body: unknown): A =>
  Schema.decodeUnknownSync(schema)(body, { onExcessProperty: "error" })

/** The `data:` payloads of a server-sent event stream. */
const events = (text: string): Array<string> =>
  text
    .split("\n\n")
    .filter((event) => event.startsWith("data: "))
    .map((event) => event.slice("data: ".length))

// The API with the chat routes beside it, as `npm start` serves them.
layer(Chat.layer(), { excludeTestServices: true })("GET /api/openapi.json", (it) => {
  describe("the OpenAPI document", () => {
    it.effect("is a valid OpenAPI 3.1 document with version 1.0.0", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        expect(document.openapi).toBe("3.1.0")
        expect(document.info.version).toBe("1.0.0")
        const result = yield* Effect.promise(() => new Validator().validate(document))
        expect(result.errors).toBeUndefined()
        expect(result.valid).toBe(true)
      })
    )

    it.effect("documents every endpoint of the API, and each one is served", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        expect(
          operations(document)
            .map(({ method, path }) => `${method.toUpperCase()} ${path}`)
            .sort()
        ).toEqual([
          "DELETE /api/v1/auth/passkeys/{id}",
          "DELETE /api/v1/keys/{id}",
          "DELETE /api/v1/webhook-endpoints/{id}",
          "GET /api/v1/auth/passkeys",
          "GET /api/v1/auth/session",
          "GET /api/v1/billing/topups",
          "GET /api/v1/chat/models",
          "GET /api/v1/chat/requests",
          "GET /api/v1/chat/requests/{id}",
          "GET /api/v1/jobs",
          "GET /api/v1/jobs/{id}",
          "GET /api/v1/jobs/{id}/events",
          "GET /api/v1/jobs/{id}/webhook-deliveries",
          "GET /api/v1/keys",
          "GET /api/v1/media-links/{uuid}",
          "GET /api/v1/models",
          "GET /api/v1/prices",
          "GET /api/v1/result-links/{uuid}",
          "GET /api/v1/results/{id}",
          "GET /api/v1/usage",
          "GET /api/v1/usage/summary",
          "GET /api/v1/webhook-endpoints",
          "GET /api/v1/webhook-endpoints/{id}",
          "GET /api/v1/webhook-endpoints/{id}/deliveries",
          "GET /api/v1/webhook-signing-secret",
          "GET /healthz",
          "GET /readyz",
          "PATCH /api/v1/webhook-endpoints/{id}",
          "POST /api/v1/auth/agent-codes",
          "POST /api/v1/auth/passkeys",
          "POST /api/v1/auth/passkeys/authentication-options",
          "POST /api/v1/auth/passkeys/registration-options",
          "POST /api/v1/auth/passkeys/sign-in",
          "POST /api/v1/auth/password-reset",
          "POST /api/v1/auth/password-reset/confirm",
          "POST /api/v1/auth/sign-in",
          "POST /api/v1/auth/sign-out",
          "POST /api/v1/auth/sign-out-everywhere",
          "POST /api/v1/auth/sign-up",
          "POST /api/v1/auth/verify-email",
          "POST /api/v1/billing/checkout",
          "POST /api/v1/billing/webhooks/stripe",
          "POST /api/v1/chat/completions",
          "POST /api/v1/jobs",
          "POST /api/v1/jobs/{id}/cancel",
          "POST /api/v1/keys",
          "POST /api/v1/media",
          "POST /api/v1/webhook-deliveries/{id}/resend",
          "POST /api/v1/webhook-endpoints",
          "POST /api/v1/webhook-endpoints/{id}/rotate-secret",
          "POST /callbacks/v1/{accountId}/{taskId}/{token}"
        ])
        for (const { method, path, operation } of operations(document)) {
          const reply = yield* T.call(path.replace(/\{[a-zA-Z]+\}/g, "x"), { method: method.toUpperCase() })
          // An unsigned media or result link, or callback URL, is served as any link that does not work: 404.
          const signedLink =
            operation.parameters?.some(
              (parameter: { name: string }) => parameter.name === "sig" || parameter.name === "token"
            ) === true
          // This server has no payment processor: billing answers 404, once a key is checked where one is needed.
          const noProcessor = path.startsWith("/api/v1/billing/")
          // The console's auth endpoints without a session take a body: none is INVALID_REQUEST.
          const needsBody =
            method === "post" && path.startsWith("/api/v1/auth/") && path !== "/api/v1/auth/passkeys/authentication-options"
          const expected = operation.security.length > 0 ? 401 : signedLink || noProcessor ? 404 : needsBody ? 400 : 200
          expect(reply.status, `${method} ${path}`).toBe(expected)
        }
      })
    )

    it.effect(
      "describes the body of POST /api/v1/jobs per model, inline, its model a const and its input the Catalog's schema",
      () =>
        Effect.gen(function* () {
          const document = yield* fetchDocument
          const catalog = yield* Catalog.Catalog
          const body = document.paths["/api/v1/jobs"].post.requestBody.content["application/json"].schema
          expect(body.oneOf).toHaveLength(catalog.models.length)
          expect(body.oneOf.map((branch: any) => branch.properties.model)).toEqual(
            catalog.models.map((model) => ({ type: "string", const: model.slug }))
          )
          for (const [index, model] of catalog.models.entries()) {
            const branch = body.oneOf[index]
            expect(branch.properties.input).toEqual(model.jsonSchema)
            expect(branch.required).toEqual(["model", "input"])
            expect(branch.properties.expectedPriceMicros.type).toBe("integer")
          }
          expect(catalog.models).toHaveLength(33)
        })
    )

    it.effect("leaves an input field with a default out of `required`, as generators read it", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        const body = document.paths["/api/v1/jobs"].post.requestBody.content["application/json"].schema
        const defaulted = body.oneOf.flatMap((branch: any) =>
          Object.entries<any>(branch.properties.input.properties)
            .filter(([, field]) => field.default !== undefined)
            .map(([name]) => ({ model: branch.properties.model.const, name, required: branch.properties.input.required ?? [] }))
        )
        expect(defaulted.length).toBeGreaterThan(20)
        for (const { model, name, required } of defaulted) expect(required, `${model} ${name}`).not.toContain(name)
      })
    )

    it.effect("lists every member a task always carries as required, errorCode nullable", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        const schemas = document.components.schemas
        const who = yield* T.customer()
        const submitted = (yield* T.submit(who)).body
        const polled = (yield* T.call(`/api/v1/jobs/${submitted.id}`, { headers: T.bearer(who.secret) })).body
        expect(submitted.errorCode).toBeNull()
        expect([...schemas.SubmittedTask.required].sort()).toEqual(Object.keys(submitted).sort())
        expect([...schemas.Task.required].sort()).toEqual(Object.keys(polled).sort())
        for (const name of ["Task", "SubmittedTask"]) {
          expect(schemas[name].properties.errorCode.anyOf).toContainEqual({ type: "null" })
        }
        expect(schemas.Asset.required).toEqual(["id", "type"])
      })
    )

    it.effect("lists every webhook event under `webhooks`: its body (task or payment) and the signature headers", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        const schemas = document.components.schemas
        expect(Object.keys(document.webhooks)).toEqual([...WebhookEvent.eventTypes])
        for (const [type, item] of Object.entries<any>(document.webhooks)) {
          const body = item.post.requestBody.content["application/json"].schema.$ref
          expect(body, type).toBe(`#/components/schemas/${type.startsWith("task.") ? "TaskWebhookBody" : "PaymentWebhookBody"}`)
          expect(item.post.parameters.map((p: { name: string }) => p.name)).toEqual([
            "webhook-id",
            "webhook-timestamp",
            "webhook-signature"
          ])
        }
        expect(schemas.TaskWebhookBody.properties.data).toEqual({ $ref: "#/components/schemas/Task" })
        expect(schemas.PaymentWebhookBody.properties.data).toEqual({ $ref: "#/components/schemas/PaymentWebhookData" })
        expect([...schemas.PaymentWebhookData.required].sort()).toEqual(
          Object.keys(
            PaymentWebhook.view({
              id: "pi_1",
              processor: "stripe",
              amountMicros: 1,
              refundedMicros: 0,
              heldMicros: 0,
              createdAt: new Date(),
              dispute: null,
              ledgerEntryIds: []
            })
          ).sort()
        )
        const payment = PaymentWebhook.view({
          id: "pi_1",
          processor: "stripe",
          amountMicros: 20_000_000,
          refundedMicros: 0,
          heldMicros: 5_000_000,
          createdAt: new Date(),
          dispute: { id: "dp_1", amountMicros: 5_000_000, status: "open" },
          ledgerEntryIds: ["entry_1"]
        })
        conforms(WebhookBodies.PaymentWebhookBody, {
          type: "payment.disputed",
          timestamp: new Date().toISOString(),
          data: payment
        })
      })
    )

    it.effect("marks every object schema that lists no members open, so generators type it as a record of unknown", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        const bare: Array<string> = []
        const walk = (node: unknown, path: string): void => {
          if (typeof node !== "object" || node === null) return
          const schema = node as Record<string, unknown>
          if (schema["type"] === "object" && schema["properties"] === undefined && schema["additionalProperties"] === undefined) {
            bare.push(path)
          }
          for (const [key, value] of Object.entries(schema)) walk(value, `${path}/${key}`)
        }
        walk(document, "#")
        expect(bare).toEqual([])
        expect(document.components.schemas.Model.properties.inputSchema).toMatchObject({
          type: "object",
          additionalProperties: true
        })
        expect(JSON.stringify(document.components.schemas.ModelField)).not.toContain("Infinity")
      })
    )

    it.effect("names the server as / when no public URL is set, else the public URL without its trailing slash", () =>
      Effect.gen(function* () {
        expect((yield* fetchDocument).servers).toEqual([{ url: "/" }])
        const { models } = yield* Catalog.Catalog
        expect(OpenApiDocument.make(models, { publicUrl: "https://api.example.com/" }).servers).toEqual([
          { url: "https://api.example.com" }
        ])
        expect(OpenApiDocument.make(models, { publicUrl: "https://example.com/taskmeter/" }).servers).toEqual([
          { url: "https://example.com/taskmeter" }
        ])
      })
    )

    it.effect("declares both credential forms and the scope of each secured operation", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        expect(document.components.securitySchemes).toEqual({
          bearerAuth: { type: "http", scheme: "Bearer", description: expect.any(String) },
          apiKeyAuth: { type: "apiKey", in: "header", name: "x-api-key", description: expect.any(String) },
          sessionCookie: { type: "apiKey", in: "cookie", name: "taskmeter_session", description: expect.any(String) }
        })
        const scopes = Object.fromEntries(
          operations(document).map(({ method, operation, path }) => [
            `${method} ${path}`,
            operation.security.map((requirement: object) => Object.entries(requirement)[0])
          ])
        )
        expect(scopes["post /api/v1/jobs"]).toEqual([
          ["bearerAuth", ["jobs:create"]],
          ["apiKeyAuth", ["jobs:create"]],
          ["sessionCookie", []]
        ])
        expect(scopes["get /api/v1/jobs/{id}"]).toEqual([
          ["bearerAuth", ["jobs:read"]],
          ["apiKeyAuth", ["jobs:read"]],
          ["sessionCookie", []]
        ])
        expect(scopes["post /api/v1/jobs/{id}/cancel"]).toEqual([
          ["bearerAuth", ["jobs:create"]],
          ["apiKeyAuth", ["jobs:create"]],
          ["sessionCookie", []]
        ])
        expect(scopes["get /api/v1/jobs/{id}/events"]).toEqual([
          ["bearerAuth", ["jobs:read"]],
          ["apiKeyAuth", ["jobs:read"]],
          ["sessionCookie", []]
        ])
        expect(scopes["get /api/v1/jobs/{id}/webhook-deliveries"]).toEqual([
          ["bearerAuth", ["jobs:read"]],
          ["apiKeyAuth", ["jobs:read"]],
          ["sessionCookie", []]
        ])
        const events = document.paths["/api/v1/jobs/{id}/events"].get
        expect(Object.keys(events.responses)).toEqual(expect.arrayContaining(["200", "204", "404", "429"]))
        expect(Object.keys(events.responses["200"].content)).toEqual(["text/event-stream"])
        expect(events.responses["429"].headers["retry-after"]).toBeDefined()
        expect(events.parameters.map((p: { name: string }) => p.name)).toContain("Last-Event-ID")
        const cancelResponses = document.paths["/api/v1/jobs/{id}/cancel"].post.responses
        expect(Object.keys(cancelResponses)).toEqual(expect.arrayContaining(["200", "202", "404", "409"]))
        const names = (operation: { parameters?: Array<{ name: string }> }) => (operation.parameters ?? []).map((p) => p.name)
        expect(names(document.paths["/api/v1/jobs"].get)).toEqual(
          expect.arrayContaining(["limit", "before", "status", "model", "createdAfter", "createdBefore"])
        )
        expect(names(document.paths["/api/v1/jobs"].post)).toContain("Prefer")
        expect(names(document.paths["/api/v1/jobs/{id}"].get)).toContain("Prefer")
        const createdAfter = document.paths["/api/v1/jobs"].get.parameters.find(
          (p: { name: string }) => p.name === "createdAfter"
        )
        expect(createdAfter.schema.format).toBe("date-time")
        expect(scopes["get /api/v1/prices"]).toEqual([])
        expect(scopes["post /api/v1/chat/completions"]).toEqual([
          ["bearerAuth", ["chat:create"]],
          ["apiKeyAuth", ["chat:create"]],
          ["sessionCookie", []]
        ])
        expect(scopes["get /api/v1/chat/requests"]).toEqual([
          ["bearerAuth", ["usage:read"]],
          ["apiKeyAuth", ["usage:read"]],
          ["sessionCookie", []]
        ])
        expect(scopes["get /api/v1/chat/requests/{id}"]).toEqual([
          ["bearerAuth", ["usage:read"]],
          ["apiKeyAuth", ["usage:read"]],
          ["sessionCookie", []]
        ])
        expect(scopes["get /api/v1/usage/summary"]).toEqual([
          ["bearerAuth", ["usage:read"]],
          ["apiKeyAuth", ["usage:read"]],
          ["sessionCookie", []]
        ])
        const from = document.paths["/api/v1/usage/summary"].get.parameters.find((p: { name: string }) => p.name === "from")
        expect(from.schema.format).toBe("date")
        expect(scopes["get /api/v1/chat/models"]).toEqual([])
        expect(scopes["get /api/v1/keys"]).toEqual([["sessionCookie", []]])
        expect(scopes["post /api/v1/auth/sign-in"]).toEqual([])
      })
    )

    it.effect("gives every error response the ErrorBody schema, and 429s a Retry-After header", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        expect(document.components.schemas.ErrorBody.properties.code.enum).toEqual(Errors.all.map((E) => E.code))
        for (const { method, operation, path } of operations(document)) {
          for (const [status, response] of Object.entries<any>(operation.responses)) {
            if (Number(status) < 400) continue
            expect(response.content["application/json"].schema, `${method} ${path} ${status}`).toEqual({
              $ref: "#/components/schemas/ErrorBody"
            })
            if (status === "429") expect(response.headers["retry-after"]).toBeDefined()
          }
        }
        const submit = document.paths["/api/v1/jobs"].post.responses
        expect(Object.keys(submit).sort()).toEqual(["200", "202", "400", "401", "403", "404", "409", "413", "429", "503"])
        expect(submit["409"].description).toContain("IDEMPOTENCY_CONFLICT")
        expect(submit["409"].description).toContain("PRICE_CHANGED")
        expect(submit["503"].description).toContain("PLATFORM_BUDGET_EXCEEDED")
        const chat = document.paths["/api/v1/chat/completions"].post.responses
        expect(Object.keys(chat).sort()).toEqual(["200", "400", "401", "403", "404", "409", "413", "429", "502", "503"])
        expect(chat["409"].description).toContain("INSUFFICIENT_CREDITS")
        expect(chat["502"].description).toContain("UPSTREAM_ERROR")
        expect(document.paths["/api/v1/chat/requests/{id}"].get.responses["404"].description).toContain("REQUEST_NOT_FOUND")
      })
    )

    it.effect("documents the raw upload and download", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        const upload = document.paths["/api/v1/media"].post
        expect(Object.keys(upload.requestBody.content)).toContain("video/webm")
        expect(upload.responses["201"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/UploadedMedia" })
        const download = document.paths["/api/v1/results/{id}"].get
        expect(Object.keys(download.responses)).toEqual(expect.arrayContaining(["200", "206", "304", "404", "416"]))
        expect(download.responses["404"].description).toContain("text asset")
        expect(download.parameters.map((parameter: { name: string }) => parameter.name)).toEqual(
          expect.arrayContaining(["id", "range", "if-none-match"])
        )
      })
    )

    it.effect("describes the chat routes from their schemas: the request, the answer or its event stream, the records", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        const schemas = document.components.schemas
        const completions = document.paths["/api/v1/chat/completions"].post
        expect(completions.requestBody.content["application/json"].schema).toEqual({
          $ref: "#/components/schemas/ChatCompletionRequest"
        })
        expect(schemas.ChatCompletionRequest.required).toEqual(["model", "messages"])
        expect(Object.keys(schemas.ChatCompletionRequest.properties)).toEqual(expect.arrayContaining([...ChatWire.FORWARDED]))
        expect(schemas.ChatMessage.properties.role.enum).toEqual([...ChatWire.ROLES])
        const answer = completions.responses["200"]
        expect(answer.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/ChatCompletion" })
        expect(Object.keys(answer.content)).toContain("text/event-stream")
        expect(answer.description).toContain("[DONE]")
        for (const event of ["ChatCompletionChunk", "ChatStreamError"]) {
          expect(answer.description).toContain(event)
          expect(schemas[event].type).toBe("object")
        }
        expect(schemas.ChatCompletionChunk.properties.usage).toEqual({ $ref: "#/components/schemas/ChatUsage" })
        expect(document.paths["/api/v1/chat/models"].get.responses["200"].content["application/json"].schema).toEqual({
          $ref: "#/components/schemas/ChatModels"
        })
        const list = document.paths["/api/v1/chat/requests"].get
        expect(list.parameters.find((parameter: { name: string }) => parameter.name === "limit").schema).toMatchObject({
          type: "integer",
          minimum: 1,
          maximum: 100,
          default: 100
        })
        expect(list.responses["200"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/ChatRequests" })
        expect(document.tags.map((tag: { name: string }) => tag.name)).toContain("chat")
      })
    )

    it.effect("what the chat routes answer is what the document's schemas say", () =>
      Effect.gen(function* () {
        conforms(ChatWire.ChatModels, (yield* T.call("/api/v1/chat/models")).body)
        const who = yield* Chat.customer(1_000_000)
        const question = {
          model: "taskmeter-local",
          messages: [{ role: "user", content: "Is this documented?" }],
          max_tokens: 40
        }
        const post = (body: object) =>
          Chat.call("/api/v1/chat/completions", who, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(body)
          })
        conforms(ChatWire.ChatCompletionRequest, question)
        const completion = yield* post(question)
        expect(completion.status).toBe(200)
        const answered = conforms(ChatWire.ChatCompletion, completion.body)
        const streamed = yield* post({ ...question, stream: true })
        expect(streamed.headers.get("content-type")).toContain("text/event-stream")
        const payloads = events(streamed.body)
        expect(payloads.at(-1)).toBe("[DONE]")
        const chunks = payloads.slice(0, -1).map((data) => conforms(ChatWire.ChatCompletionChunk, JSON.parse(data)))
        expect(chunks.at(-1)?.svc?.charged_micros).toEqual(expect.any(Number))
        const page = conforms(ChatWire.ChatRequestPage, (yield* Chat.call("/api/v1/chat/requests", who)).body)
        expect(page.requests.map((request) => request.id)).toContain(answered.id)
        conforms(ChatWire.ChatRequestView, yield* Chat.request(who, answered.id))
      })
    )

    it.effect("lists the media links upstreams fetch as internal, without credentials, not for API callers", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        const link = document.paths["/api/v1/media-links/{uuid}"].get
        expect(link["x-internal"]).toBe(true)
        expect(link.security).toEqual([])
        expect(link.description).toContain("Not for API callers")
        expect(link.parameters.map((parameter: { name: string }) => parameter.name)).toEqual([
          "uuid",
          "acct",
          "exp",
          "sig",
          "range",
          "if-none-match",
          "if-range"
        ])
        expect(Object.keys(link.responses).sort()).toEqual(["200", "206", "304", "404", "416", "503"])
        expect(Object.keys(link.responses["200"].content)).toContain("video/webm")
        expect(link.responses["404"].description).toContain("JOB_NOT_FOUND")
        expect(document.tags.map((tag: { name: string }) => tag.name)).toContain(link.tags[0])
      })
    )

    it.effect("lists the provider callback route as internal, without credentials, its token a path parameter", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        const callback = document.paths["/callbacks/v1/{accountId}/{taskId}/{token}"].post
        expect(callback["x-internal"]).toBe(true)
        expect(callback.security).toEqual([])
        expect(callback.description).toContain("Not for API callers")
        expect(callback.parameters.map((parameter: { name: string }) => parameter.name)).toEqual(["accountId", "taskId", "token"])
        expect(Object.keys(callback.responses).sort()).toEqual(["200", "202", "400", "404", "503"])
        expect(document.tags.map((tag: { name: string }) => tag.name)).toContain(callback.tags[0])
      })
    )

    it.effect("documents retention: the task's expiresAt and dataRemoved, and the download's 410 RESULT_EXPIRED", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        const task = document.components.schemas.Task.properties
        expect(task.expiresAt.format).toBe("date-time")
        expect(task.dataRemoved.description).toContain("expired")
        expect(document.components.schemas.Task.required).not.toContain("expiresAt")
        const download = document.paths["/api/v1/results/{id}"].get
        expect(JSON.stringify(download.responses["410"])).toContain("RESULT_EXPIRED")
      })
    )

    it.effect("lists the signed result links beside the results download, without credentials, serving its file types", () =>
      Effect.gen(function* () {
        const document = yield* fetchDocument
        const link = document.paths["/api/v1/result-links/{uuid}"].get
        const download = document.paths["/api/v1/results/{id}"].get
        expect(link["x-internal"]).toBeUndefined()
        expect(link.security).toEqual([])
        expect(link.tags).toEqual(download.tags)
        expect(link.description).toContain("downloadUrl")
        expect(link.parameters.map((parameter: { name: string }) => parameter.name)).toEqual([
          "uuid",
          "acct",
          "exp",
          "sig",
          "range",
          "if-none-match",
          "if-range"
        ])
        expect(Object.keys(link.responses).sort()).toEqual(["200", "206", "304", "404", "410", "416", "503"])
        expect(link.responses["200"].content).toEqual(download.responses["200"].content)
        expect(link.responses["404"].description).toContain("JOB_NOT_FOUND")
        expect(link.responses["410"].description).toContain("RESULT_EXPIRED")
      })
    )
  })
})
