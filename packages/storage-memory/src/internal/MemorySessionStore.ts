import { Effect } from "effect"
import { SessionStore } from "@taskmeter/kernel"
import type { State } from "./State.ts"

export const make = (state: State): SessionStore.SessionStore["Service"] =>
  SessionStore.SessionStore.of({
    insertSession: (session) => Effect.sync(() => void state.sessions.set(session.hash, session)),
    findSession: (hash) => Effect.sync(() => state.sessions.get(hash)),
    touchSession: (hash, at) =>
      Effect.sync(() => {
        const session = state.sessions.get(hash)
        if (session !== undefined && session.revokedAt === null && session.lastSeenAt < at) {
          state.sessions.set(hash, { ...session, lastSeenAt: at })
        }
      }),
    revokeSession: (hash, at) =>
      Effect.sync(() => {
        const session = state.sessions.get(hash)
        if (session === undefined) return false
        if (session.revokedAt === null) state.sessions.set(hash, { ...session, revokedAt: at })
        return true
      }),
    revokeUserSessions: (userId, at) =>
      Effect.sync(() => {
        let revoked = 0
        for (const session of state.sessions.values()) {
          if (session.userId === userId && session.revokedAt === null) {
            state.sessions.set(session.hash, { ...session, revokedAt: at })
            revoked += 1
          }
        }
        return revoked
      })
  })
