import { Effect } from "effect"
import { AccountStore } from "@taskmeter/kernel"
import type { State } from "./State.ts"

const WINDOW_MS = 60_000

export const make = (state: State): AccountStore.AccountStore["Service"] =>
  AccountStore.AccountStore.of({
    createAccount: (account) =>
      Effect.sync(() => {
        state.accounts.set(account.id, {
          account,
          balance: 0,
          reserved: 0,
          review: false,
          entries: [],
          spend: new Map(),
          submissions: null
        })
        return account
      }),
    getAccount: (id) => Effect.sync(() => state.accounts.get(id)?.account),
    setResultRetention: (accountId, days) =>
      Effect.sync(() => {
        if (!state.accounts.has(accountId)) return false
        if (days === null) state.resultRetentionDays.delete(accountId)
        else state.resultRetentionDays.set(accountId, days)
        return true
      }),
    getResultRetention: (accountId) => Effect.sync(() => state.resultRetentionDays.get(accountId) ?? null),
    listAccounts: Effect.sync(() => Array.from(state.accounts.values(), (row) => row.account)),
    insertApiKey: (key) =>
      Effect.sync(() => {
        if (!state.accounts.has(key.accountId)) throw new Error(`No account ${key.accountId} for key ${key.id}`)
        state.keys.set(key.id, { record: key, requests: null })
        state.keysByHash.set(key.hash, key.id)
      }),
    listApiKeys: (accountId) =>
      Effect.sync(() => Array.from(state.keys.values(), (row) => row.record).filter((key) => key.accountId === accountId)),
    revokeApiKey: (accountId, keyId, at) =>
      Effect.sync(() => {
        const row = state.keys.get(keyId)
        if (row === undefined || row.record.accountId !== accountId) return false
        if (row.record.revokedAt === null) row.record = { ...row.record, revokedAt: at }
        return true
      }),
    authenticate: (hash, now) =>
      Effect.sync(() => {
        const id = state.keysByHash.get(hash)
        const row = id === undefined ? undefined : state.keys.get(id)
        if (row === undefined) return undefined
        const time = now.getTime()
        if (row.requests === null || time >= row.requests.start + WINDOW_MS) row.requests = { start: time, count: 0 }
        row.requests.count += 1
        return {
          key: row.record,
          requestsInWindow: row.requests.count,
          windowResetsAt: new Date(row.requests.start + WINDOW_MS)
        }
      })
  })
