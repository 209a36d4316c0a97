/**
 * The ErrorBoundary middleware: every failure of an endpoint becomes its error response. Where
 * the fix for a kernel error is another route of the API, the API names that route.
 */
import { Effect, Layer, Schema } from "effect"
import { Errors } from "@taskmeter/kernel"
import { ErrorBoundary } from "../api/ErrorBoundary.ts"
import * as ErrorResponse from "../ErrorResponse.ts"

const isModelNotFound = Schema.is(Errors.ModelNotFound)

/** The kernel's error with the API route that helps fix it, where there is one. */
const withRoute = (error: unknown): unknown =>
  isModelNotFound(error)
    ? new Errors.ModelNotFound({
        message: `${error.message.replace(/\.$/, "")}: GET /api/v1/models lists them.`,
        ...(error.model === undefined ? {} : { model: error.model })
      })
    : error

export const layer: Layer.Layer<ErrorBoundary> = Layer.succeed(
  ErrorBoundary,
  ErrorBoundary.of((httpEffect) => Effect.catchCause(Effect.mapError(httpEffect, withRoute), ErrorResponse.fromCause))
)
