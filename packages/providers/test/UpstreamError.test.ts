import { describe, expect, it } from "@effect/vitest"
import { JobHandle, UpstreamError } from "@taskmeter/providers"

describe("UpstreamError.fromStatus", () => {
  it.each([
    [400, "Terminal", "UPSTREAM_REJECTED_INPUT"],
    [401, "Terminal", "UPSTREAM_AUTH_FAILED"],
    [402, "Terminal", "UPSTREAM_PAYMENT_REQUIRED"],
    [403, "Terminal", "UPSTREAM_AUTH_FAILED"],
    [404, "Terminal", "UPSTREAM_NOT_FOUND"],
    [409, "Terminal", "UPSTREAM_CLIENT_ERROR"],
    [413, "Terminal", "UPSTREAM_REJECTED_INPUT"],
    [422, "Terminal", "UPSTREAM_REJECTED_INPUT"],
    [408, "Retryable", undefined],
    [429, "RateLimited", undefined],
    [500, "Retryable", undefined],
    [502, "Retryable", undefined],
    [503, "Retryable", undefined],
    [504, "Retryable", undefined]
  ] as const)("%i is %s", (status, reason, errorCode) => {
    const error = UpstreamError.fromStatus(status, { message: "why" })
    expect(error.reason).toBe(reason)
    expect(error.errorCode).toBe(errorCode)
    expect(error.status).toBe(status)
    expect(error.message).toBe(`upstream answered ${status}: why`)
  })
})

describe("UpstreamError.parseRetryAfter", () => {
  const now = Date.parse("2026-01-01T00:00:00Z")
  it("reads delta-seconds and HTTP dates, and nothing else", () => {
    expect(UpstreamError.parseRetryAfter("120", now)).toBe(120_000)
    expect(UpstreamError.parseRetryAfter("Thu, 01 Jan 2026 00:00:30 GMT", now)).toBe(30_000)
    expect(UpstreamError.parseRetryAfter("Wed, 31 Dec 2025 23:00:00 GMT", now)).toBe(0)
    expect(UpstreamError.parseRetryAfter("soon", now)).toBeUndefined()
    expect(UpstreamError.parseRetryAfter("-5", now)).toBeUndefined()
    expect(UpstreamError.parseRetryAfter(null, now)).toBeUndefined()
  })
})

describe("UpstreamError.fromTransport", () => {
  const refused = new TypeError("fetch failed", {
    cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })
  })
  const reset = new TypeError("fetch failed", {
    cause: Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" })
  })
  it("tells requests that never left from requests that may have arrived", () => {
    expect(UpstreamError.fromTransport("submit", refused, "POST x").reason).toBe("Retryable")
    expect(UpstreamError.fromTransport("submit", reset, "POST x").reason).toBe("OutcomeUnknown")
    expect(UpstreamError.fromTransport("poll", reset, "GET x").reason).toBe("Retryable")
    expect(UpstreamError.fromTransport("submit", new TypeError("fetch failed"), "POST x").reason).toBe("OutcomeUnknown")
  })
})

describe("JobHandle", () => {
  it("round-trips the upstream id with and without extras", () => {
    expect(JobHandle.decode(JobHandle.encode("task_1"))).toEqual({ id: "task_1" })
    expect(JobHandle.encode("task_1", { keep: 3 })).toBe("task_1#keep=3")
    expect(JobHandle.decode("task_1#keep=3")).toEqual({ id: "task_1", keep: 3 })
  })
})
