import { Effect } from "effect"
import { PasskeyStore } from "@taskmeter/kernel"
import type { State } from "./State.ts"

export const make = (state: State): PasskeyStore.PasskeyStore["Service"] =>
  PasskeyStore.PasskeyStore.of({
    insertPasskey: (passkey) =>
      Effect.sync(() => {
        if (state.passkeys.has(passkey.credentialId)) return false
        if (!state.users.has(passkey.userId)) throw new Error(`No user ${passkey.userId}`)
        state.passkeys.set(passkey.credentialId, passkey)
        return true
      }),
    listPasskeys: (userId) => Effect.sync(() => [...state.passkeys.values()].filter((passkey) => passkey.userId === userId)),
    findPasskey: (credentialId) => Effect.sync(() => state.passkeys.get(credentialId)),
    deletePasskey: (userId, credentialId) =>
      Effect.sync(() => state.passkeys.get(credentialId)?.userId === userId && state.passkeys.delete(credentialId)),
    recordUse: (credentialId, counter, at) =>
      Effect.sync(() => {
        const passkey = state.passkeys.get(credentialId)
        if (passkey !== undefined) {
          state.passkeys.set(credentialId, { ...passkey, counter: Math.max(passkey.counter, counter), lastUsedAt: at })
        }
      }),
    insertChallenge: (challenge) =>
      Effect.sync(() => void state.passkeyChallenges.set(challenge.hash, { challenge, used: false })),
    consumeChallenge: (hash, purpose, now) =>
      Effect.sync(() => {
        const row = state.passkeyChallenges.get(hash)
        if (row === undefined || row.used || row.challenge.purpose !== purpose || now >= row.challenge.expiresAt) {
          return undefined
        }
        row.used = true
        return row.challenge
      })
  })
