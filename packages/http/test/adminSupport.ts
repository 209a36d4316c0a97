/**
 * Test support for the admin service: a task held in reconciliation_required, made through the
 * TaskStore port as a worker would leave it after an unknown outcome; an MCP sign-in, made
 * through the OAuthStore port as a redeemed authorization code leaves it.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto"
import { Effect } from "effect"
import { expect } from "@effect/vitest"
import { Ids, type Money, TaskStore } from "@taskmeter/kernel"
import { OAuthStore } from "@taskmeter/mcp"

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")

/** An MCP sign-in (grant) of the account for `<baseUrl>/mcp`: its id and a working access token. */
export const mcpSignIn = (accountId: string, baseUrl: string, clientId = `mcpc_${randomUUID()}`) =>
  Effect.gen(function* () {
    const store = yield* OAuthStore.OAuthStore
    const now = new Date()
    const grantId = randomUUID()
    const code = sha256(randomUUID())
    const accessToken = `tmat_${randomBytes(32).toString("base64url")}`
    yield* store.insertCode({
      hash: code,
      grantId,
      clientId,
      redirectUri: "http://127.0.0.1:9000/callback",
      codeChallenge: "c".repeat(43),
      accountId: accountId as Ids.AccountId,
      apiKeyId: null,
      scopes: ["jobs:read", "usage:read"],
      resource: `${new URL(baseUrl).origin}/mcp`,
      createdAt: now,
      expiresAt: new Date(now.getTime() + 300_000),
      redeemedAt: null
    })
    const redemption = yield* store.redeemCode(code, now, {
      accessHash: sha256(accessToken),
      accessExpiresAt: new Date(now.getTime() + 3_600_000),
      refreshHash: sha256(randomUUID()),
      refreshExpiresAt: new Date(now.getTime() + 30 * 86_400_000),
      scopes: ["jobs:read", "usage:read"]
    })
    expect(redemption._tag).toBe("Redeemed")
    return { grantId, clientId, accessToken }
  })

/**
 * A task of the account, admitted for `model` and moved to reconciliation_required, with the
 * upstream's last answer when given.
 */
export const heldTask = (accountId: string, priceMicros: number, model = "song-lyrics", upstreamAnswer?: string) =>
  Effect.gen(function* () {
    const store = yield* TaskStore.TaskStore
    const now = new Date()
    const id = Ids.makeTaskId()
    const price = priceMicros as Money.Micros
    const admitted = yield* store.admit({
      task: {
        id,
        accountId: accountId as Ids.AccountId,
        apiKeyId: null,
        model,
        input: { prompt: "a song about ledgers" },
        priceMicros: price,
        unitMicros: price,
        quantity: 1,
        settlement: "fixed",
        createdAt: now,
        deadlineAt: new Date(now.getTime() + 3_600_000)
      },
      idempotencyKey: `held-${id}`,
      fingerprint: id,
      idempotencyExpiresAt: new Date(now.getTime() + 3_600_000),
      limits: { submissionsPerMinute: 1000, maxUnfinishedTasks: 1000, keyUsageLimit: null }
    })
    expect(admitted._tag).toBe("Admitted")
    const [claim] = (yield* store.claim({ workerId: "test", limit: 10, leaseMs: 60_000, now, models: [model] })).filter(
      (c) => c.task.id === id
    )
    for (const [from, to] of [
      ["queued", "submitting"],
      ["submitting", "reconciliation_required"]
    ] as const) {
      const result = yield* store.transition({
        taskId: id,
        leaseToken: claim!.leaseToken,
        from,
        to,
        now,
        keepLease: true,
        errorCode: to === "reconciliation_required" ? "OUTCOME_UNKNOWN" : undefined,
        ...(upstreamAnswer === undefined ? {} : { upstreamAnswer })
      })
      expect(result._tag).toBe("Done")
    }
    return id
  })
