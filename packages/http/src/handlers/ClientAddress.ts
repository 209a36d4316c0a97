/**
 * The client a request counts against in per-client limits (console sign-in throttle), as MCP's
 * counts it: ClientSource.sourceOf of the request's remote address, which is the socket's peer or,
 * from a proxy TRUSTED_PROXIES lists, the client its X-Forwarded-For names (Server.serve's middleware).
 */
import { Effect, Option } from "effect"
import { HttpServerRequest } from "effect/http"
import { ClientSource } from "@taskmeter/kernel"

export const clientSource = Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
  ClientSource.sourceOf(Option.getOrUndefined(request.remoteAddress))
)
