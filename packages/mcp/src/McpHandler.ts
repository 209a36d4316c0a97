/**
 * The MCP protocol handler: the official SDK's `createMcpHandler` (v2), serving 2026-07-28 and,
 * through its stateless fallback, 2025-11-25 and 2025-06-18. Every request gets a fresh `McpServer`
 * with the eight tools bound to the account it authenticated as (`authInfo.extra`). Tool calls run
 * as Effects on the kernel services and are interrupted when the client cancels or goes away.
 */
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server"
import type { CallToolResult, McpHttpHandler, McpRequestContext, ServerContext } from "@modelcontextprotocol/server"
import { Cause, Context, Effect, Layer } from "effect"
import { Errors } from "@taskmeter/kernel"
import type { Accounts } from "@taskmeter/kernel"
import * as Tools from "./Tools.ts"
import * as ToolSchema from "./ToolSchema.ts"
import { describeUnstorable, firstUnstorable } from "./internal/StorableText.ts"

/** The largest JSON-RPC body accepted: the API's limit for JSON bodies. */
export const MAX_BODY_BYTES = 256 * 1024

const INSTRUCTIONS =
  "taskmeter runs hosted image, video, music and text models as paid asynchronous tasks. " +
  "Usual flow: search_models, then get_model (input schema and an exact quote), then create_task (spends " +
  "credits, reserved up front and charged only on success), then wait_for_task until it is finished; results " +
  "are in the task's assets. Amounts are integer USD micro-units (1 USD = 1000000)."

export interface Options {
  /** The service's public origin, for absolute links in results. */
  readonly baseUrl: string
  readonly serverVersion?: string | undefined
}

export class McpHandler extends Context.Service<McpHandler, McpHttpHandler>()("@taskmeter/mcp/McpHandler") {}

/** Where the route leaves the authenticated caller for the server factory. */
export const CALLER_KEY = "taskmeterCaller"

const errorResult = (error: Errors.ApiError): CallToolResult => ({
  isError: true,
  content: [{ type: "text", text: `${error.code}: ${error.message}` }],
  structuredContent: {
    ...Errors.errorBody(error),
    ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds })
  }
})

const successResult = (outcome: Tools.Outcome<unknown>): CallToolResult => ({
  content: [
    { type: "text", text: outcome.summary },
    { type: "text", text: JSON.stringify(outcome.structured) }
  ],
  structuredContent: outcome.structured as { [key: string]: unknown }
})

/** `args` without the arguments `tool` judges itself (see Tools.Tool.validatesOwnText). */
const withoutOwnText = (tool: Tools.Tool, args: unknown): unknown => {
  const own = tool.validatesOwnText
  if (own === undefined || typeof args !== "object" || args === null || Array.isArray(args)) return args
  return Object.fromEntries(Object.entries(args).filter(([name]) => !own.includes(name)))
}

const execute = (tool: Tools.Tool, args: unknown, call: Tools.Call) =>
  Effect.gen(function* () {
    if (tool.scope !== null && !call.caller.scopes.includes(tool.scope)) {
      return yield* new Errors.InsufficientScope({
        message: `${tool.name} needs the ${tool.scope} permission, which this sign-in does not have; sign in again and approve it.`
      })
    }
    const unstorable = firstUnstorable(withoutOwnText(tool, args), "arguments")
    if (unstorable !== undefined) return yield* new Errors.InvalidRequest({ message: describeUnstorable(unstorable) })
    return successResult(yield* tool.run(yield* ToolSchema.decodeArguments(tool.input, args), call))
  }).pipe(
    Effect.catchTags({
      StoreUnavailable: () =>
        Effect.fail(new Errors.ApiUnavailable({ message: "The service is temporarily unavailable; retry shortly." })),
      AccountNotFound: (error) =>
        Effect.fail(new Errors.AuthRequired({ message: `The account ${error.accountId} no longer exists; sign in again.` }))
    }),
    Effect.catch((error: Errors.ApiError) => Effect.succeed(errorResult(error))),
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause)
        : Effect.as(
            Effect.logError(`MCP tool ${tool.name} failed`, cause),
            errorResult(new Errors.ApiUnavailable({ message: "The service could not complete this call; retry shortly." }))
          )
    )
  )

export const make = (options: Options) =>
  Effect.gen(function* () {
    const context = yield* Effect.context<Tools.Services>()
    const run = Effect.runPromiseWith(context)
    const tools = Tools.all.map((tool) => ({
      tool,
      inputSchema: ToolSchema.input(tool.input),
      outputSchema: ToolSchema.output(tool.output)
    }))

    const progressOf = (ctx: ServerContext): Tools.Call["progress"] => {
      const progressToken = ctx.mcpReq._meta?.progressToken
      if (progressToken === undefined) return () => Effect.void
      return (progress, total, message) =>
        Effect.ignore(
          Effect.tryPromise(() =>
            ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken, progress, total, message } })
          )
        )
    }

    const factory = (request: McpRequestContext) => {
      const caller = request.authInfo?.extra?.[CALLER_KEY] as Accounts.Caller | undefined
      if (caller === undefined) throw new Error("McpHandler: a request reached the MCP server without an authenticated caller")
      const server = new McpServer(
        { name: "taskmeter", title: "taskmeter", version: options.serverVersion ?? "0.1.0" },
        { instructions: INSTRUCTIONS }
      )
      for (const { tool, inputSchema, outputSchema } of tools) {
        server.registerTool(
          tool.name,
          { title: tool.title, description: tool.description, annotations: tool.annotations, inputSchema, outputSchema },
          (args: unknown, ctx: ServerContext) =>
            run(execute(tool, args, { caller, baseUrl: options.baseUrl, progress: progressOf(ctx) }), {
              signal: ctx.mcpReq.signal
            })
        )
      }
      return server
    }

    const handler = createMcpHandler(factory, {
      maxRequestBodySize: MAX_BODY_BYTES,
      onerror: (error) => void run(Effect.logDebug("MCP request refused", error))
    })
    yield* Effect.addFinalizer(() => Effect.promise(() => handler.close()))
    return handler
  })

/** The MCP handler over the kernel services of the context; closed with the layer's scope. */
export const layer = (options: Options): Layer.Layer<McpHandler, never, Tools.Services> => Layer.effect(McpHandler, make(options))
