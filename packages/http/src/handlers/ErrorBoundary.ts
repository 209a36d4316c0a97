/** The ErrorBoundary middleware: every failure of an endpoint becomes its error response. */
import { Effect, Layer } from "effect"
import { ErrorBoundary } from "../api/ErrorBoundary.ts"
import * as ErrorResponse from "../ErrorResponse.ts"

export const layer: Layer.Layer<ErrorBoundary> = Layer.succeed(
  ErrorBoundary,
  ErrorBoundary.of((httpEffect) => Effect.catchCause(httpEffect, ErrorResponse.fromCause))
)
