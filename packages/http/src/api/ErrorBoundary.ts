/**
 * The outermost middleware of every API endpoint: it turns every failure into the spec's error
 * body `{ code, error }` with its status (and `Retry-After` where one applies). Request decoding
 * failures become INVALID_REQUEST (or INVALID_IDEMPOTENCY_KEY for that header) naming the value
 * to fix; an unreachable store becomes API_UNAVAILABLE. The error schemas each endpoint
 * declares are what the OpenAPI document and clients see; this middleware is what makes the
 * server keep to them.
 */
import { HttpApiMiddleware } from "effect/http-api"

export class ErrorBoundary extends HttpApiMiddleware.Service<ErrorBoundary>()("@taskmeter/http/ErrorBoundary") {}
