import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Errors } from "@taskmeter/kernel"

describe("Errors", () => {
  it("encodes every error to the spec's body { code, error } alone", () => {
    const limited = new Errors.RateLimited({ message: "Too many submissions.", retryAfterSeconds: 7 })
    expect(Schema.encodeSync(Errors.RateLimited)(limited)).toEqual({ code: "RATE_LIMITED", error: "Too many submissions." })
    expect(limited.retryAfterSeconds).toBe(7)
    expect(Errors.errorBody(limited)).toEqual({ code: "RATE_LIMITED", error: "Too many submissions." })
  })

  it("sends none of the structured fields: a body decodes to the message alone", () => {
    const changed = new Errors.PriceChanged({ message: "Now 5.", model: "m", expectedPriceMicros: 4, priceMicros: 5 })
    expect(changed).toMatchObject({ model: "m", expectedPriceMicros: 4, priceMicros: 5 })
    expect(Schema.encodeSync(Errors.PriceChanged)(changed)).toEqual({ code: "PRICE_CHANGED", error: "Now 5." })
    const poor = new Errors.InsufficientCredits({ message: "Add credits.", requiredMicros: 8, availableMicros: 5 })
    expect(Schema.encodeSync(Errors.InsufficientCredits)(poor)).toEqual({ code: "INSUFFICIENT_CREDITS", error: "Add credits." })
    const decoded = Schema.decodeUnknownSync(Errors.PriceChanged)({ code: "PRICE_CHANGED", error: "Now 5." })
    expect(decoded.model).toBeUndefined()
    expect(decoded.priceMicros).toBeUndefined()
  })

  it("decodes a body into its class only for that class's code", () => {
    const decoded = Schema.decodeUnknownSync(Errors.PriceChanged)({ code: "PRICE_CHANGED", error: "Now 5." })
    expect(decoded).toBeInstanceOf(Errors.PriceChanged)
    expect(decoded.message).toBe("Now 5.")
    expect(() => Schema.decodeUnknownSync(Errors.PriceChanged)({ code: "IDEMPOTENCY_CONFLICT", error: "x" })).toThrow()
    const either = Schema.decodeUnknownSync(Schema.Union([Errors.IdempotencyConflict, Errors.PriceChanged]))
    expect(either({ code: "PRICE_CHANGED", error: "Now 5." })).toBeInstanceOf(Errors.PriceChanged)
  })

  it("gives each class its code and status, the status as its httpApiStatus annotation", () => {
    for (const E of Errors.all) {
      const error = new E({ message: "m" })
      expect([error.code, error.status]).toEqual([E.code, E.status])
      expect(E.ast.annotations?.httpApiStatus).toBe(E.status)
      expect(Errors.isApiError(error)).toBe(true)
    }
    expect(Errors.all.map((E) => E.code)).toEqual(Errors.codes)
    expect(Errors.isApiError(new Error("m"))).toBe(false)
  })

  it.effect("fails an Effect as a yieldable tagged error", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Effect.gen(function* () {
          return yield* new Errors.JobNotFound({ message: "No task." })
        })
      )
      expect(error._tag).toBe("JobNotFound")
    })
  )
})
