import { Effect } from "effect"
import { UserStore } from "@taskmeter/kernel"
import type { Ids } from "@taskmeter/kernel"
import type { State } from "./State.ts"

const sameEmail = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase()

export const make = (state: State): UserStore.UserStore["Service"] => {
  const update = (userId: Ids.UserId, change: Partial<UserStore.UserRecord>) =>
    Effect.sync(() => {
      const user = state.users.get(userId)
      if (user === undefined) return false
      state.users.set(userId, { ...user, ...change })
      return true
    })
  return UserStore.UserStore.of({
    insertUser: (user, membership) =>
      Effect.sync(() => {
        if ([...state.users.values()].some((other) => sameEmail(other.email, user.email))) return false
        if (!state.accounts.has(membership.accountId)) throw new Error(`No account ${membership.accountId}`)
        state.users.set(user.id, user)
        state.memberships.push(membership)
        return true
      }),
    getUser: (id) => Effect.sync(() => state.users.get(id)),
    findByEmail: (email) => Effect.sync(() => [...state.users.values()].find((user) => sameEmail(user.email, email))),
    memberships: (userId) => Effect.sync(() => state.memberships.filter((m) => m.userId === userId)),
    members: (accountId) =>
      Effect.sync(() =>
        state.memberships.flatMap((m) => {
          const user = m.accountId === accountId ? state.users.get(m.userId) : undefined
          return user === undefined ? [] : [{ user, role: m.role }]
        })
      ),
    markVerified: (userId, at) =>
      Effect.flatMap(
        Effect.sync(() => state.users.get(userId)),
        (user) => update(userId, { emailVerifiedAt: user?.emailVerifiedAt ?? at })
      ),
    setPasswordHash: (userId, passwordHash) => update(userId, { passwordHash }),
    setOperator: (userId, operator) => update(userId, { operator }),
    insertToken: (token) => Effect.sync(() => void state.emailTokens.set(token.hash, { token, used: false })),
    consumeToken: (hash, purpose, now) =>
      Effect.sync(() => {
        const row = state.emailTokens.get(hash)
        if (row === undefined || row.used || row.token.purpose !== purpose || now >= row.token.expiresAt) return undefined
        row.used = true
        return row.token
      }),
    signInFailures: (keys, since) =>
      Effect.sync(() =>
        [...new Set(keys)].flatMap((key) => {
          const window = state.signInFailures.get(key)
          return window === undefined || window.start <= since ? [] : [{ key, ...window }]
        })
      ),
    recordSignInFailure: (keys, now, since) =>
      Effect.sync(() => {
        const ended = [...state.signInFailures].filter(([key, window]) => window.start <= since && !keys.includes(key))
        for (const [key] of ended.slice(0, 100)) state.signInFailures.delete(key)
        for (const key of new Set(keys)) {
          const window = state.signInFailures.get(key)
          state.signInFailures.set(
            key,
            window === undefined || window.start <= since
              ? { start: now, failures: 1 }
              : { ...window, failures: window.failures + 1 }
          )
        }
      })
  })
}
