/**
 * `Prefer: wait=N` (RFC 7240, as Replicate takes it) on POST /api/v1/jobs and GET
 * /api/v1/jobs/{id}: hold the answer until the task is terminal, for at most N seconds, 1 to 60;
 * `wait` alone is 60. A `wait` out of range or not a whole number is 400 INVALID_REQUEST (nothing
 * is stored); other preferences are ignored. A wait that was applied is echoed in `Preference-Applied`.
 */
import { Effect } from "effect"
import { Errors } from "@taskmeter/kernel"

export const MAX_WAIT_SECONDS = 60

export const HEADER = "prefer"
export const APPLIED_HEADER = "preference-applied"

const invalid = (value: string) =>
  new Errors.InvalidRequest({
    message: `Prefer: wait=${value} is not a wait this API takes: send wait=N with N a whole number of seconds from 1 to ${MAX_WAIT_SECONDS}, or wait alone for ${MAX_WAIT_SECONDS}.`
  })

/** The seconds to wait, or undefined when the request prefers no wait. */
export const parse = (header: string | undefined): Effect.Effect<number | undefined, Errors.InvalidRequest> => {
  if (header === undefined) return Effect.succeed(undefined)
  // Node joins repeated Prefer headers with ", "; parameters of a preference follow ";".
  for (const preference of header.split(",")) {
    const [token = ""] = preference.split(";")
    const separator = token.indexOf("=")
    const name = (separator < 0 ? token : token.slice(0, separator)).trim().toLowerCase()
    if (name !== "wait") continue
    if (separator < 0) return Effect.succeed(MAX_WAIT_SECONDS)
    const value = token
      .slice(separator + 1)
      .trim()
      .replace(/^"(.*)"$/u, "$1")
    const seconds = /^\d{1,3}$/u.test(value) ? Number(value) : Number.NaN
    return seconds >= 1 && seconds <= MAX_WAIT_SECONDS ? Effect.succeed(seconds) : Effect.fail(invalid(value))
  }
  return Effect.succeed(undefined)
}

/** The OpenAPI parameter of the header, for the operations that take it. */
export const parameter = {
  name: "Prefer",
  in: "header",
  required: false,
  description:
    `\`wait=N\` (N from 1 to ${MAX_WAIT_SECONDS}; \`wait\` alone is ${MAX_WAIT_SECONDS}): answer once the task is terminal, or after N seconds with its ` +
    "current status (status codes as without it). An applied wait is echoed in `Preference-Applied`. " +
    "A wait out of range is 400 INVALID_REQUEST.",
  schema: { type: "string", examples: ["wait=30"] }
} as const

/** An operation transform adding the Prefer parameter. */
export const documented = (operation: Record<string, any>): Record<string, any> => ({
  ...operation,
  parameters: [...(operation.parameters ?? []), parameter]
})
