/**
 * The chat storage port in process memory, over the state the other memory ports share: a
 * chat request's reservation, charge and release move the same account rows and journal as
 * tasks do. Each method does its checks and writes in one `Effect.sync`, so it is atomic.
 */
import { Effect } from "effect"
import { ChatStore, Money } from "@taskmeter/kernel"
import { append } from "./Journal.ts"
import type { State, Window } from "./State.ts"

const RATE_WINDOW_MS = 60_000

interface ChatRow {
  record: ChatStore.ChatRequestRecord
  readonly stored: Omit<ChatStore.StoredChatRequest, "record">
}

export const make = (state: State): ChatStore.ChatStore["Service"] => {
  const rows = new Map<string, ChatRow>()
  /** Per account, oldest first. */
  const byAccount = new Map<string, Array<ChatRow>>()
  const windows = new Map<string, Window>()
  /** Requests still open, per account. */
  const openCounts = new Map<string, number>()

  const moveOpen = (accountId: string, by: 1 | -1) => openCounts.set(accountId, (openCounts.get(accountId) ?? 0) + by)

  const open = (request: ChatStore.NewChatRequest, limits: ChatStore.ChatLimits): ChatStore.OpenResult => {
    const account = state.accounts.get(request.accountId)
    if (account === undefined) throw new Error(`No account ${request.accountId}`)
    const now = request.createdAt.getTime()
    const key = request.apiKeyId === null ? undefined : state.keys.get(request.apiKeyId)
    if (limits.keyUsageLimit !== null && key !== undefined && key.record.usageCount >= limits.keyUsageLimit) {
      return { _tag: "KeyUsageExceeded" }
    }
    const current = windows.get(request.accountId)
    const window = current !== undefined && now < current.start + RATE_WINDOW_MS ? current : null
    if (window !== null && window.count >= limits.requestsPerMinute) {
      return { _tag: "RateLimited", retryAfterSeconds: Math.max(1, Math.ceil((window.start + RATE_WINDOW_MS - now) / 1000)) }
    }
    if ((openCounts.get(request.accountId) ?? 0) >= limits.maxOpenRequests) return { _tag: "ConcurrencyLimited" }
    if (account.review) return { _tag: "PaymentReviewRequired" }
    const available = account.balance - account.reserved
    if (available < request.reservedMicros) return { _tag: "InsufficientCredits", availableMicros: available }

    const record: ChatStore.ChatRequestRecord = {
      id: request.id,
      model: request.model,
      status: "open",
      reservedMicros: request.reservedMicros,
      chargedMicros: null,
      usage: null,
      finishReason: null,
      errorCode: null,
      createdAt: request.createdAt,
      completedAt: null
    }
    append(state, account, {
      kind: "reserve",
      amountMicros: request.reservedMicros,
      chatRequestId: request.id,
      createdAt: request.createdAt
    })
    const row: ChatRow = { record, stored: { accountId: request.accountId, tiers: request.tiers } }
    rows.set(request.id, row)
    const list = byAccount.get(request.accountId)
    if (list === undefined) byAccount.set(request.accountId, [row])
    else list.push(row)
    moveOpen(request.accountId, 1)
    if (window === null) windows.set(request.accountId, { start: now, count: 1 })
    else window.count += 1
    if (key !== undefined) key.record = { ...key.record, usageCount: key.record.usageCount + 1 }
    return { _tag: "Opened", record }
  }

  const settle = (settlement: ChatStore.ChatSettlement): ChatStore.ChatRequestRecord | undefined => {
    const row = rows.get(settlement.id)
    if (row === undefined) return undefined
    if (row.record.status !== "open") return row.record
    const reserved = row.record.reservedMicros
    if (settlement.chargeMicros > reserved) {
      throw new RangeError(`Charge ${settlement.chargeMicros} exceeds the reservation ${reserved} of ${settlement.id}`)
    }
    const account = state.accounts.get(row.stored.accountId)!
    moveOpen(row.stored.accountId, -1)
    const at = { chatRequestId: settlement.id, createdAt: settlement.completedAt }
    if (settlement.chargeMicros > 0) append(state, account, { kind: "charge", amountMicros: settlement.chargeMicros, ...at })
    if (reserved - settlement.chargeMicros > 0) {
      append(state, account, { kind: "release", amountMicros: reserved - settlement.chargeMicros, ...at })
    }
    row.record = {
      ...row.record,
      status: settlement.status,
      chargedMicros: settlement.chargeMicros,
      usage: settlement.usage,
      finishReason: settlement.finishReason,
      errorCode: settlement.errorCode,
      completedAt: settlement.completedAt
    }
    return row.record
  }

  return ChatStore.ChatStore.of({
    open: (request, limits) => Effect.sync(() => open(request, limits)),
    find: (id) =>
      Effect.sync(() => {
        const row = rows.get(id)
        return row === undefined ? undefined : { record: row.record, ...row.stored }
      }),
    settle: (settlement) => Effect.sync(() => settle(settlement)),
    get: (accountId, id) =>
      Effect.sync(() => {
        const row = rows.get(id)
        return row !== undefined && row.stored.accountId === accountId ? row.record : undefined
      }),
    list: (accountId, page) =>
      Effect.sync((): ChatStore.ChatPage | undefined => {
        const list = byAccount.get(accountId) ?? []
        let end = list.length
        if (page.before !== undefined) {
          end = list.findIndex((row) => row.record.id === page.before)
          if (end < 0) return undefined
        }
        const start = Math.max(0, end - page.limit)
        const requests = list
          .slice(start, end)
          .reverse()
          .map((row) => row.record)
        return { requests, nextCursor: start > 0 ? (requests.at(-1)?.id ?? null) : null }
      }),
    sweepStale: (openedBefore, now) =>
      Effect.sync(() => {
        let swept = 0
        for (const row of rows.values()) {
          if (row.record.status !== "open" || row.record.createdAt >= openedBefore) continue
          settle({
            id: row.record.id,
            status: "failed",
            usage: null,
            finishReason: null,
            errorCode: ChatStore.ABANDONED,
            chargeMicros: Money.ZERO,
            completedAt: now
          })
          swept++
        }
        return swept
      })
  })
}
