/**
 * "Connect an agent": a signed-in person makes a one-time MCP sign-in code for the session's
 * account (SignInCodes, as `taskmeter admin signin-code` does) and pastes it into the agent's MCP
 * sign-in page at `mcpUrl`. Session only: an API key is PERMISSION_DENIED.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Errors } from "@taskmeter/kernel"
import { SessionAuth } from "./SessionSecurity.ts"

export const AgentCode = Schema.Struct({
  code: Schema.String.annotate({ description: "The one-time code; shown once, works once." }),
  expiresAt: Schema.String.annotate({ format: "date-time" }),
  mcpUrl: Schema.String.annotate({ description: "The MCP endpoint to add to the agent." })
}).annotate({ identifier: "AgentCode" })

export const AgentCodesApi = HttpApiGroup.make("agentCodes")
  .add(
    HttpApiEndpoint.post("create", "/api/v1/auth/agent-codes", {
      success: AgentCode.pipe(HttpApiSchema.status(201)),
      error: [Errors.AuthRequired, Errors.ApiUnavailable]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Make a one-time MCP sign-in code",
          description:
            "For the session's account; the agent's MCP sign-in page takes it in place of an API key, once, for ten minutes."
        })
      )
      .middleware(SessionAuth)
  )
  .annotate(OpenApi.Description, "Connecting an agent (an MCP client) to the account.")
