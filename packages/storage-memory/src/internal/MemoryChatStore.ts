/**
 * The chat storage port in process memory, over the state the other memory ports share: a
 * chat request's reservation, charge and release move the same account rows and journal as
 * tasks do. Each method does its checks and writes in one `Effect.sync`, so it is atomic. A
 * lease's reserve and release entries carry its id as their note.
 */
import { Effect } from "effect"
import { ChatStore, Money } from "@taskmeter/kernel"
import { append } from "./Journal.ts"
import { revenue } from "./MemoryRevenue.ts"
import type { State, Window } from "./State.ts"

const RATE_WINDOW_MS = 60_000

interface Lease {
  readonly accountId: string
  reserved: number
  charged: number
  expiresAt: Date
  closed: boolean
}

interface ChatRow {
  record: ChatStore.ChatRequestRecord
  readonly stored: Omit<ChatStore.StoredChatRequest, "record">
  /** The upstream that served it, its cost and the shortfall, once settled. */
  served?: { readonly upstream: string | null; readonly costMicros: number | null; readonly shortfallMicros: number }
}

const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

const servedOf = (s: ChatStore.ChatSettlement | ChatStore.LeasedSettlement) => ({
  upstream: s.upstream ?? null,
  costMicros: s.upstreamCostMicros ?? null,
  shortfallMicros: s.shortfallMicros ?? 0
})

export const make = (state: State): ChatStore.ChatStore["Service"] => {
  const rows = new Map<string, ChatRow>()
  /** Per account, oldest first. */
  const byAccount = new Map<string, Array<ChatRow>>()
  const windows = new Map<string, Window>()
  /** Requests still open, per account. */
  const openCounts = new Map<string, number>()

  const leases = new Map<string, Lease>()

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
    insert({ record, stored: { accountId: request.accountId, tiers: request.tiers } })
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
    if (settlement.chargeMicros > 0) {
      append(state, account, { kind: "charge", amountMicros: settlement.chargeMicros, model: row.record.model, ...at })
    }
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
    row.served = servedOf(settlement)
    return row.record
  }

  const insert = (row: ChatRow) => {
    rows.set(row.record.id, row)
    const list = byAccount.get(row.stored.accountId)
    if (list === undefined) byAccount.set(row.stored.accountId, [row])
    else list.push(row)
  }

  const lease = (request: ChatStore.LeaseRequest): ChatStore.LeaseResult => {
    const account = state.accounts.get(request.accountId)
    if (account === undefined) throw new Error(`No account ${request.accountId}`)
    const current = leases.get(request.id)
    if (current?.closed === true) return { _tag: "LeaseClosed" }
    if (account.review) return { _tag: "PaymentReviewRequired" }
    const available = account.balance - account.reserved
    if (available < request.needMicros) return { _tag: "InsufficientCredits", availableMicros: available }
    const granted = Math.min(request.wantMicros, available)
    if (granted > 0) append(state, account, { kind: "reserve", amountMicros: granted, note: request.id, createdAt: request.at })
    if (current === undefined) {
      leases.set(request.id, {
        accountId: request.accountId,
        reserved: granted,
        charged: 0,
        expiresAt: request.expiresAt,
        closed: false
      })
    } else {
      current.reserved += granted
      current.expiresAt = request.expiresAt
    }
    return { _tag: "Leased", grantedMicros: Money.micros(granted) }
  }

  const settleLeased = (s: ChatStore.LeasedSettlement) => {
    if (rows.has(s.id)) return
    const held = leases.get(s.leaseId)
    const account = state.accounts.get(s.accountId)!
    const charge = held !== undefined && !held.closed && held.reserved - held.charged >= s.chargeMicros ? s.chargeMicros : 0
    if (charge > 0) {
      held!.charged += charge
      append(state, account, {
        kind: "charge",
        amountMicros: charge,
        chatRequestId: s.id,
        createdAt: s.completedAt,
        model: s.model
      })
    }
    const key = s.apiKeyId === null ? undefined : state.keys.get(s.apiKeyId)
    if (key !== undefined) key.record = { ...key.record, usageCount: key.record.usageCount + 1 }
    insert({
      record: {
        id: s.id,
        model: s.model,
        status: s.status,
        reservedMicros: s.reservedMicros,
        chargedMicros: Money.micros(charge),
        usage: s.usage,
        finishReason: s.finishReason,
        errorCode: s.errorCode,
        createdAt: s.createdAt,
        completedAt: s.completedAt
      },
      stored: { accountId: s.accountId as ChatStore.StoredChatRequest["accountId"], tiers: s.tiers },
      served: servedOf(s)
    })
  }

  const close = (id: string, at: Date): boolean => {
    const held = leases.get(id)
    if (held === undefined || held.closed) return false
    held.closed = true
    const rest = held.reserved - held.charged
    if (rest > 0)
      append(state, state.accounts.get(held.accountId)!, { kind: "release", amountMicros: rest, note: id, createdAt: at })
    return true
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
      }),
    lease: (request) => Effect.sync(() => lease(request)),
    renewLeases: (ids, expiresAt) =>
      Effect.sync(() =>
        ids.filter((id) => {
          const held = leases.get(id)
          if (held === undefined || held.closed) return false
          held.expiresAt = expiresAt
          return true
        })
      ),
    margin: (range) =>
      Effect.sync(() => {
        const groups = new Map<
          string,
          { model: string; upstream: string | null; requests: number; charged: number; cost: number; shortfall: number }
        >()
        for (const row of rows.values()) {
          const { record } = row
          if (record.status === "open" || record.createdAt < range.from || record.createdAt >= range.to) continue
          const upstream = row.served?.upstream ?? null
          const key = JSON.stringify([record.model, upstream])
          const group = groups.get(key) ?? {
            model: record.model,
            upstream,
            requests: 0,
            charged: 0,
            cost: 0,
            shortfall: 0
          }
          group.requests += 1
          group.charged += record.chargedMicros ?? 0
          group.cost += row.served?.costMicros ?? 0
          group.shortfall += row.served?.shortfallMicros ?? 0
          groups.set(key, group)
        }
        return [...groups.values()]
          .sort((a, b) => byCodePoint(a.model, b.model) || byCodePoint(a.upstream ?? "", b.upstream ?? ""))
          .slice(0, ChatStore.MARGIN_ROWS)
          .map((group) => ({
            model: group.model,
            upstream: group.upstream,
            requests: group.requests,
            chargedMicros: Money.micros(group.charged),
            upstreamCostMicros: Money.micros(group.cost),
            shortfallMicros: Money.micros(group.shortfall)
          }))
      }),

    revenue: (range) =>
      Effect.sync(() =>
        revenue(
          state,
          [...rows.values()]
            .filter((row) => row.record.status !== "open")
            .map((row) => ({
              model: row.record.model,
              createdAt: row.record.createdAt,
              chargedMicros: row.record.chargedMicros ?? 0,
              costMicros: row.served?.costMicros ?? 0,
              shortfallMicros: row.served?.shortfallMicros ?? 0
            })),
          range
        )
      ),

    settleLeased: (settlements) => Effect.sync(() => settlements.forEach(settleLeased)),
    closeLeases: (ids, at) => Effect.sync(() => ids.filter((id) => close(id, at)).length),
    sweepLeases: (now) =>
      Effect.sync(() => Array.from(leases).filter(([id, held]) => !held.closed && held.expiresAt < now && close(id, now)).length)
  })
}
