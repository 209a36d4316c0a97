/**
 * The in-memory OAuthStore. JavaScript runs one callback at a time, so each method, doing its
 * checks and writes inside one `Effect.sync`, is atomic within the process.
 */
import { Effect } from "effect"
import type { Ids } from "@taskmeter/kernel"
import type {
  ActiveGrant,
  AuthorizationCode,
  CodeRedemption,
  Grant,
  NewTokens,
  OAuthStore,
  PendingAuthorization,
  RegisteredClient,
  RegistrationAdmission,
  Rotation,
  SignInCode,
  TokenRecord
} from "../OAuthStore.ts"

interface SignInCodeRow extends SignInCode {
  used: boolean
}

interface RegistrationCount {
  count: number
  readonly end: Date
}

export const makeMemoryStore = (): OAuthStore["Service"] => {
  const clients = new Map<string, RegisteredClient>()
  const pending = new Map<string, PendingAuthorization>()
  const codes = new Map<string, AuthorizationCode>()
  const grants = new Map<string, Grant>()
  const tokens = new Map<string, TokenRecord>()
  const signInCodes = new Map<string, SignInCodeRow>()
  /** Keyed by window start and source; the total of a window under its start alone. */
  const registrationCounts = new Map<string, RegistrationCount>()

  const live = (expiresAt: Date, now: Date) => expiresAt.getTime() > now.getTime()

  const insertTokens = (grantId: string, now: Date, next: NewTokens) => {
    tokens.set(next.accessHash, {
      hash: next.accessHash,
      kind: "access",
      grantId,
      scopes: next.scopes,
      createdAt: now,
      expiresAt: next.accessExpiresAt,
      rotatedAt: null
    })
    tokens.set(next.refreshHash, {
      hash: next.refreshHash,
      kind: "refresh",
      grantId,
      scopes: next.scopes,
      createdAt: now,
      expiresAt: next.refreshExpiresAt,
      rotatedAt: null
    })
  }

  const revoke = (grantId: string, now: Date): boolean => {
    const grant = grants.get(grantId)
    if (grant === undefined || grant.revokedAt !== null) return false
    grants.set(grantId, { ...grant, revokedAt: now })
    return true
  }

  return {
    insertClient: (client) => Effect.sync(() => void clients.set(client.clientId, client)),
    getClient: (clientId) => Effect.sync(() => clients.get(clientId)),

    insertPending: (row) => Effect.sync(() => void pending.set(row.id, row)),
    getPending: (id, now) =>
      Effect.sync(() => {
        const row = pending.get(id)
        return row !== undefined && live(row.expiresAt, now) ? row : undefined
      }),
    recordFailedAttempt: (id, now) =>
      Effect.sync(() => {
        const row = pending.get(id)
        if (row === undefined || !live(row.expiresAt, now)) return undefined
        const failedAttempts = row.failedAttempts + 1
        pending.set(id, { ...row, failedAttempts })
        return failedAttempts
      }),
    takePending: (id, now) =>
      Effect.sync(() => {
        const row = pending.get(id)
        pending.delete(id)
        return row !== undefined && live(row.expiresAt, now) ? row : undefined
      }),

    insertCode: (code) => Effect.sync(() => void codes.set(code.hash, code)),
    getCode: (hash) => Effect.sync(() => codes.get(hash)),
    redeemCode: (hash, now, next) =>
      Effect.sync((): CodeRedemption => {
        const code = codes.get(hash)
        if (code === undefined) return { _tag: "Invalid" }
        if (code.redeemedAt !== null) {
          revoke(code.grantId, now)
          return { _tag: "AlreadyRedeemed" }
        }
        if (!live(code.expiresAt, now)) return { _tag: "Invalid" }
        codes.set(hash, { ...code, redeemedAt: now })
        const client = clients.get(code.clientId)
        if (client !== undefined && client.unusedExpiresAt !== null)
          clients.set(client.clientId, { ...client, unusedExpiresAt: null })
        const grant: Grant = {
          id: code.grantId,
          clientId: code.clientId,
          accountId: code.accountId,
          apiKeyId: code.apiKeyId,
          scopes: code.scopes,
          resource: code.resource,
          createdAt: now,
          revokedAt: null
        }
        grants.set(grant.id, grant)
        insertTokens(grant.id, now, next)
        return { _tag: "Redeemed", grant }
      }),

    findToken: (hash) =>
      Effect.sync(() => {
        const token = tokens.get(hash)
        const grant = token === undefined ? undefined : grants.get(token.grantId)
        return token === undefined || grant === undefined ? undefined : { token, grant }
      }),
    rotateRefresh: (hash, now, next) =>
      Effect.sync((): Rotation => {
        const token = tokens.get(hash)
        const grant = token === undefined ? undefined : grants.get(token.grantId)
        if (token === undefined || token.kind !== "refresh" || grant === undefined) return { _tag: "Invalid" }
        if (token.rotatedAt !== null) {
          revoke(grant.id, now)
          return { _tag: "Reused" }
        }
        if (grant.revokedAt !== null || !live(token.expiresAt, now)) return { _tag: "Invalid" }
        tokens.set(hash, { ...token, rotatedAt: now })
        insertTokens(grant.id, now, next)
        return { _tag: "Rotated" }
      }),
    revokeGrant: (grantId, now) => Effect.sync(() => revoke(grantId, now)),
    getGrant: (grantId) => Effect.sync(() => grants.get(grantId)),
    listActiveGrants: (accountId, now) =>
      Effect.sync(() => {
        const active: Array<ActiveGrant> = []
        for (const grant of grants.values()) {
          if (grant.accountId !== accountId || grant.revokedAt !== null) continue
          const family = [...tokens.values()].filter((token) => token.grantId === grant.id)
          const refresh = family.find(
            (token) => token.kind === "refresh" && token.rotatedAt === null && live(token.expiresAt, now)
          )
          if (refresh === undefined) continue
          active.push({
            grant,
            clientName: clients.get(grant.clientId)?.clientName ?? null,
            lastIssuedAt: new Date(Math.max(...family.map((token) => token.createdAt.getTime()))),
            refreshExpiresAt: refresh.expiresAt
          })
        }
        return active.sort(
          (a, b) => b.grant.createdAt.getTime() - a.grant.createdAt.getTime() || (a.grant.id < b.grant.id ? -1 : 1)
        )
      }),

    insertSignInCode: (code) => Effect.sync(() => void signInCodes.set(code.hash, { ...code, used: false })),
    redeemSignInCode: (hash, now) =>
      Effect.sync((): Ids.AccountId | undefined => {
        const row = signInCodes.get(hash)
        if (row === undefined || row.used || !live(row.expiresAt, now)) return undefined
        row.used = true
        return row.accountId
      }),

    admitRegistration: (window) =>
      Effect.sync((): RegistrationAdmission => {
        const countOf = (key: string) => {
          const found = registrationCounts.get(key)
          if (found !== undefined) return found
          const created = { count: 0, end: window.end }
          registrationCounts.set(key, created)
          return created
        }
        const source = countOf(`${window.start.getTime()} ${window.source}`)
        const total = countOf(`${window.start.getTime()}`)
        if (source.count >= window.perSource) return { _tag: "Limited", by: "source" }
        if (total.count >= window.total) return { _tag: "Limited", by: "total" }
        source.count++
        total.count++
        return { _tag: "Admitted" }
      }),

    admitRequest: (window) =>
      Effect.sync(() => {
        const key = `${window.start.getTime()} ${window.bucket}`
        const found = registrationCounts.get(key) ?? { count: 0, end: window.end }
        registrationCounts.set(key, found)
        if (found.count >= window.limit) return false
        found.count++
        return true
      }),

    purgeExpired: (now) =>
      Effect.sync(() => {
        let removed = 0
        const sweep = <V>(map: Map<string, V>, dead: (value: V) => boolean) => {
          for (const [key, value] of map) {
            if (dead(value)) {
              map.delete(key)
              removed++
            }
          }
        }
        sweep(pending, (row) => !live(row.expiresAt, now))
        sweep(codes, (row) => !live(row.expiresAt, now))
        sweep(signInCodes, (row) => !live(row.expiresAt, now))
        sweep(tokens, (row) => !live(row.expiresAt, now))
        const withTokens = new Set([...tokens.values()].map((token) => token.grantId))
        sweep(grants, (grant) => !withTokens.has(grant.id))
        sweep(registrationCounts, (row) => !live(row.end, now))
        const inProgress = new Set([...pending.values(), ...codes.values()].map((row) => row.clientId))
        sweep(
          clients,
          (client) => client.unusedExpiresAt !== null && !live(client.unusedExpiresAt, now) && !inProgress.has(client.clientId)
        )
        return removed
      })
  }
}
