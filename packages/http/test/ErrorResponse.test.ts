import { Cause, Effect } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { StoreError } from "@taskmeter/kernel"
import * as ErrorResponse from "../src/ErrorResponse.ts"

const answer = (cause: Cause.Cause<unknown>) =>
  Effect.gen(function* () {
    const response = yield* ErrorResponse.fromCause(cause)
    const body = response.body._tag === "Uint8Array" ? JSON.parse(new TextDecoder().decode(response.body.body)) : undefined
    return { status: response.status, body, retryAfter: response.headers["retry-after"] }
  })

describe("ErrorResponse.fromCause", () => {
  it.effect("a write the store refused for its data is 400 INVALID_REQUEST, without Retry-After", () =>
    Effect.gen(function* () {
      const refused = new StoreError.StoreRefused({ message: "the database refused the request's data", code: "22P05" })
      for (const cause of [Cause.die(refused), Cause.fail(refused)]) {
        const { body, retryAfter, status } = yield* answer(cause)
        expect(status).toBe(400)
        expect(body).toEqual({
          code: "INVALID_REQUEST",
          error:
            "The request's data could not be stored: the database refused the request's data; change the data and send it again."
        })
        expect(retryAfter).toBeUndefined()
      }
    })
  )

  it.effect("an unreachable store stays 503 API_UNAVAILABLE", () =>
    Effect.gen(function* () {
      const { body, status } = yield* answer(Cause.fail(new StoreError.StoreUnavailable({ message: "connection lost" })))
      expect(status).toBe(503)
      expect(body.code).toBe("API_UNAVAILABLE")
    })
  )
})
