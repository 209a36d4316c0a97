/**
 * Test support for the admin service: an MCP sign-in, made through the OAuthStore port as a
 * redeemed authorization code leaves it. (A task held in reconciliation_required:
 * `HeldTask.make` of `@taskmeter/kernel/testing`.)
 */
import { createHash, randomBytes, randomUUID } from "node:crypto"
import { Effect } from "effect"
import { expect } from "@effect/vitest"
import type { Ids } from "@taskmeter/kernel"
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
