/**
 * The error responses of the API, as schemas: the spec's body `{ code, error }` (`ErrorBody`)
 * and, per kernel error class, a schema that encodes that error into the body with its HTTP
 * status and decodes such a body back into the class (so an HttpApiClient fails with
 * `Errors.JobNotFound`, not with a plain object).
 *
 * Endpoints list the classes they can fail with (`errors(...)`); the OpenAPI document then shows
 * every status an endpoint can return, each with the ErrorBody schema and the codes behind it.
 */
import { Schema, SchemaTransformation } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Errors } from "@taskmeter/kernel"

export type ErrorClass = (typeof Errors.all)[number]

export const ErrorCode = Schema.Literals(Errors.all.map((E) => E.code)).annotate({
  description: "Stable error code; clients branch on it."
})

/** The spec's error body. */
export const ErrorBody = Schema.Struct({
  code: ErrorCode,
  error: Schema.String.annotate({ description: "What went wrong and what to fix, for people." })
}).annotate({ identifier: "ErrorBody", description: "Every error response has this body." })
export type ErrorBody = typeof ErrorBody.Type

/** The spec's condition for each code, shown in the OpenAPI document. */
export const conditions: { readonly [C in Errors.ErrorCode]: string } = {
  AUTH_REQUIRED: "Missing or invalid API key.",
  INSUFFICIENT_SCOPE: "The key lacks the scope the endpoint needs.",
  PERMISSION_DENIED: "The credential cannot perform the operation (for example, a revoked key).",
  API_KEY_RATE_LIMITED: "The key's rate limit is reached; honor the Retry-After header.",
  API_KEY_USAGE_EXCEEDED: "The key reached its usage limit; a new key is needed.",
  INVALID_REQUEST: "The body is not a JSON object, or a required value is missing or malformed.",
  INVALID_IDEMPOTENCY_KEY: "Idempotency-Key is not 1 to 128 printable ASCII characters.",
  INVALID_MODEL_INPUT: "input violates the model schema: unknown field, missing required field, or invalid value.",
  INPUT_TOO_LARGE: "The request body is too large; upload media first and send a reference.",
  REQUEST_NOT_FOUND: "No request with this id or cursor belongs to the account.",
  MODEL_NOT_FOUND: "No model has this slug.",
  JOB_NOT_FOUND: "No task (or result) with this id belongs to the account.",
  IDEMPOTENCY_CONFLICT: "The Idempotency-Key was already used with different input.",
  PRICE_CHANGED: "The price differs from expectedPriceMicros.",
  MODEL_PRICE_UNAVAILABLE: "No price is configured for the model, or it is disabled.",
  PAYMENT_REVIEW_REQUIRED: "A refund left an uncovered balance; tasks cannot be submitted until it is covered.",
  INSUFFICIENT_CREDITS: "Available credits do not cover the task price.",
  RATE_LIMITED: "Too many task submissions per minute; honor the Retry-After header.",
  CONCURRENCY_LIMITED: "Too many unfinished tasks.",
  EXECUTION_UNAVAILABLE: "Execution is not configured for the model at present.",
  UPSTREAM_RATE_LIMITED: "The model provider rate-limits requests; nothing is charged; retry with backoff.",
  UPSTREAM_ERROR: "The model provider failed the request; nothing is charged.",
  PLATFORM_BUDGET_EXCEEDED: "The model is temporarily unavailable.",
  EXECUTION_TEMPORARILY_UNAVAILABLE: "Retry with the same Idempotency-Key.",
  AUTH_UNAVAILABLE: "Authentication is temporarily unavailable.",
  API_UNAVAILABLE: "The API is temporarily unavailable."
}

const make = (E: ErrorClass) =>
  ErrorBody.pipe(
    Schema.decodeTo(
      Schema.declare((u: unknown): u is InstanceType<typeof E> => u instanceof E),
      SchemaTransformation.transform({
        decode: (body) => new E({ message: body.error }),
        encode: (error) => Errors.errorBody(error)
      })
    ),
    HttpApiSchema.status(E.status)
  ).annotate({ description: `${E.code}: ${conditions[E.code]}` })

const cache = new Map<ErrorClass, ReturnType<typeof make>>()

/** The response schema of one error class (the same schema each time, so documents share it). */
export const errorSchema = <E extends ErrorClass>(
  E: E
): Schema.Codec<InstanceType<E>, ErrorBody> => {
  let schema = cache.get(E)
  if (schema === undefined) {
    schema = make(E)
    cache.set(E, schema)
  }
  return schema as unknown as Schema.Codec<InstanceType<E>, ErrorBody>
}

/** The response schemas of the given error classes, for an endpoint's `error` option. */
export const errors = <const Es extends ReadonlyArray<ErrorClass>>(
  ...classes: Es
): { readonly [K in keyof Es]: Schema.Codec<InstanceType<Es[K]>, ErrorBody> } =>
  classes.map(errorSchema) as never
