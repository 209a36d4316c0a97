import { randomUUID } from "node:crypto"
import { Deferred, Effect } from "effect"
import { AdmissionRules, TaskErrorCode, TaskStatus, TaskStore } from "@taskmeter/kernel"
import type { AccountStore, Money } from "@taskmeter/kernel"
import { append } from "./Journal.ts"
import { wake } from "./State.ts"
import { enqueue } from "./MemoryWebhookStore.ts"
import type { AccountRow, SlotHolder, State, TaskRow } from "./State.ts"

const RATE_WINDOW_MS = 60_000

type Result = TaskStore.AdmissionResult

const claimable = (row: TaskRow, now: number): boolean =>
  TaskStatus.isUnfinished(row.record.status) && (row.leaseExpiresAt === null || row.leaseExpiresAt <= now)

const keyOf = (accountId: string, idempotencyKey: string): string => `${accountId} ${idempotencyKey}`

export const make = (state: State, accounts: AccountStore.AccountStore["Service"]): TaskStore.TaskStore["Service"] => {
  const findIdempotent = (accountId: string, idempotencyKey: string, now: number): TaskStore.IdempotentSubmission | undefined => {
    const earlier = state.idempotency.get(keyOf(accountId, idempotencyKey))
    if (earlier === undefined || earlier.expiresAt <= now) return undefined
    return { task: (state.tasks.get(earlier.taskId) as TaskRow).record, fingerprint: earlier.fingerprint }
  }

  const admit = (request: TaskStore.AdmissionRequest): Result => {
    const { task, limits } = request
    const now = task.createdAt.getTime()
    const account = state.accounts.get(task.accountId)
    if (account === undefined) throw new Error(`No account ${task.accountId}`)

    const key = task.apiKeyId === null ? undefined : state.keys.get(task.apiKeyId)
    const window = account.submissions !== null && now < account.submissions.start + RATE_WINDOW_MS ? account.submissions : null
    const available = account.balance - account.reserved
    const rules: { readonly [R in AdmissionRules.StoreRule]: () => Result | undefined } = {
      Idempotency: () => {
        const earlier = findIdempotent(task.accountId, request.idempotencyKey, now)
        if (earlier === undefined) return undefined
        return earlier.fingerprint === request.fingerprint
          ? { _tag: "Replayed", task: earlier.task }
          : { _tag: "IdempotencyConflict", taskId: earlier.task.id }
      },
      KeyUsage: () =>
        limits.keyUsageLimit !== null && key !== undefined && key.record.usageCount >= limits.keyUsageLimit
          ? { _tag: "KeyUsageExceeded" }
          : undefined,
      RateLimit: () =>
        window !== null && window.count >= limits.submissionsPerMinute
          ? { _tag: "RateLimited", retryAfterSeconds: Math.max(1, Math.ceil((window.start + RATE_WINDOW_MS - now) / 1000)) }
          : undefined,
      Concurrency: () => (unfinishedOf(account) >= limits.maxUnfinishedTasks ? { _tag: "ConcurrencyLimited" } : undefined),
      PaymentReview: () => (account.review ? { _tag: "PaymentReviewRequired" } : undefined),
      Credits: () => (available < task.priceMicros ? { _tag: "InsufficientCredits", availableMicros: available } : undefined)
    }
    for (const rule of AdmissionRules.inStore) {
      const answer = rules[rule]()
      if (answer !== undefined) return answer
    }

    const { webhook, ...fields } = task
    const record: TaskStore.TaskRecord = {
      ...fields,
      status: "queued",
      errorCode: null,
      chargedMicros: null,
      assets: [],
      upstreamRef: null,
      provider: null,
      attempts: 0,
      updatedAt: task.createdAt,
      cancelRequestedAt: null
    }
    append(state, account, { kind: "reserve", amountMicros: task.priceMicros, taskId: task.id, createdAt: task.createdAt })
    state.tasks.set(task.id, { record, leaseToken: null, leaseExpiresAt: null, upstreamAnswer: null, seq: state.nextSeq++ })
    if (webhook !== undefined) state.taskWebhooks.set(task.id, webhook)
    state.idempotency.set(keyOf(task.accountId, request.idempotencyKey), {
      fingerprint: request.fingerprint,
      taskId: task.id,
      expiresAt: request.idempotencyExpiresAt.getTime()
    })
    if (window === null) account.submissions = { start: now, count: 1 }
    else window.count += 1
    if (key !== undefined) key.record = { ...key.record, usageCount: key.record.usageCount + 1 }
    wake(state)
    return { _tag: "Admitted", task: record }
  }

  const unfinishedOf = (account: AccountRow): number => {
    let count = 0
    for (const row of state.tasks.values()) {
      if (row.record.accountId === account.account.id && TaskStatus.isUnfinished(row.record.status)) count++
    }
    return count
  }

  /** Writes the credit effect of entering `to`; throws (writing nothing) on a charge the reservation cannot cover. */
  const settle = (
    row: TaskRow,
    to: TaskStatus.TaskStatus,
    chargeMicros: Money.Micros | undefined,
    at: Date,
    note: string | undefined = undefined
  ) => {
    const reservation = row.record.priceMicros
    const effect = TaskStatus.creditEffectOf(to)
    if (effect === "charge" && (chargeMicros === undefined || chargeMicros > reservation || chargeMicros < 0)) {
      throw new RangeError(`Task ${row.record.id}: charge ${chargeMicros} does not fit reservation ${reservation}`)
    }
    const account = state.accounts.get(row.record.accountId) as AccountRow
    const taskId = row.record.id
    if (effect === "charge") {
      const charged = chargeMicros as Money.Micros
      append(state, account, { kind: "charge", amountMicros: charged, taskId, note, createdAt: at, model: row.record.model })
      if (charged < reservation) {
        append(state, account, { kind: "release", amountMicros: reservation - charged, taskId, note, createdAt: at })
      }
    }
    if (effect === "release") append(state, account, { kind: "release", amountMicros: reservation, taskId, note, createdAt: at })
  }

  const transition = (request: TaskStore.TransitionRequest): TaskStore.TransitionResult => {
    if (!TaskStatus.canTransition(request.from, request.to)) {
      return { _tag: "IllegalTransition", from: request.from, to: request.to }
    }
    const row = state.tasks.get(request.taskId)
    if (row === undefined || row.leaseToken !== request.leaseToken || row.record.status !== request.from) {
      return { _tag: "LeaseLost" }
    }
    settle(row, request.to, request.chargeMicros, request.now)
    row.record = {
      ...row.record,
      status: request.to,
      updatedAt: request.now,
      ...(request.errorCode === undefined ? {} : { errorCode: request.errorCode }),
      ...(request.upstreamRef === undefined ? {} : { upstreamRef: request.upstreamRef }),
      ...(request.provider === undefined ? {} : { provider: request.provider }),
      ...(request.assets === undefined ? {} : { assets: request.assets }),
      ...(request.to === "succeeded" ? { chargedMicros: request.chargeMicros ?? null } : {})
    }
    if (request.to === "reconciliation_required" && request.upstreamAnswer !== undefined) {
      row.upstreamAnswer = request.upstreamAnswer.slice(0, TaskStore.MAX_UPSTREAM_ANSWER)
    }
    if (!request.keepLease || TaskStatus.isTerminal(request.to)) {
      row.leaseToken = null
      row.leaseExpiresAt = null
      if (TaskStatus.isUnfinished(request.to)) wake(state)
    }
    enqueue(state, row.record)
    state.statuses.wake([{ taskId: request.taskId, status: request.to }])
    return { _tag: "Done", task: row.record }
  }

  /** Whether the lease is still live at `now`. */
  const live = (holder: SlotHolder | undefined, now: number): boolean => {
    if (holder === undefined) return false
    const row = state.tasks.get(holder.taskId)
    return row !== undefined && row.leaseToken === holder.leaseToken && row.leaseExpiresAt !== null && row.leaseExpiresAt > now
  }

  const takeSlots = (request: TaskStore.SlotRequest): boolean => {
    const now = request.now.getTime()
    const self: SlotHolder = { taskId: request.taskId, leaseToken: request.leaseToken }
    if (!live(self, now)) return false
    const picks: Array<[Array<SlotHolder | undefined>, number]> = []
    for (const { lane, limit } of request.lanes) {
      const slots = state.slots.get(lane) ?? []
      state.slots.set(lane, slots)
      const mine = slots.findIndex((h, i) => i < limit && h?.taskId === self.taskId && h.leaseToken === self.leaseToken)
      let pick = mine
      if (pick === -1) {
        for (let i = 0; i < limit; i++) {
          if (!live(slots[i], now)) {
            pick = i
            break
          }
        }
      }
      if (pick === -1) return false
      picks.push([slots, pick])
    }
    for (const [slots, pick] of picks) slots[pick] = self
    return true
  }

  return TaskStore.TaskStore.of({
    admit: TaskStore.admitInSteps(accounts, (request) => Effect.sync(() => admit(request))),
    findIdempotent: (accountId, idempotencyKey, now) =>
      Effect.sync(() => findIdempotent(accountId, idempotencyKey, now.getTime())),
    takeChore: ({ name, holder, now, leaseMs, everyMs }) =>
      Effect.sync(() => {
        const chore = state.chores.get(name)
        const at = now.getTime()
        if (chore !== undefined && (chore.leaseUntil > at || chore.takenAt > at - everyMs)) return false
        state.chores.set(name, { holder, leaseUntil: at + leaseMs, takenAt: at })
        return true
      }),
    freeChore: ({ name, holder }) =>
      Effect.sync(() => {
        const chore = state.chores.get(name)
        if (chore?.holder === holder) state.chores.set(name, { holder: undefined, leaseUntil: 0, takenAt: chore.takenAt })
      }),
    purgeIdempotencyKeys: (expiredBefore, limit) =>
      Effect.sync(() => {
        const cutoff = expiredBefore.getTime()
        let deleted = 0
        for (const [key, row] of state.idempotency) {
          if (deleted >= limit) break
          if (row.expiresAt <= cutoff) {
            state.idempotency.delete(key)
            deleted++
          }
        }
        return deleted
      }),
    get: (accountId, taskId) =>
      Effect.sync(() => {
        const row = state.tasks.get(taskId)
        return row?.record.accountId === accountId ? row.record : undefined
      }),
    list: (accountId, limit, filter = {}) =>
      Effect.sync(() => {
        const cursor = filter.before === undefined ? undefined : state.tasks.get(filter.before)
        if (filter.before !== undefined && cursor?.record.accountId !== accountId) return []
        const newer = (a: TaskRow, b: TaskRow) => b.record.createdAt.getTime() - a.record.createdAt.getTime() || b.seq - a.seq
        return Array.from(state.tasks.values())
          .filter(
            (row) =>
              row.record.accountId === accountId &&
              (cursor === undefined || newer(row, cursor) > 0) &&
              (filter.status === undefined || row.record.status === filter.status) &&
              (filter.model === undefined || row.record.model === filter.model) &&
              (filter.createdAfter === undefined || row.record.createdAt > filter.createdAfter) &&
              (filter.createdBefore === undefined || row.record.createdAt < filter.createdBefore)
          )
          .sort(newer)
          .slice(0, limit)
          .map((row) => row.record)
      }),
    claim: (options) =>
      Effect.sync(() => {
        const now = options.now.getTime()
        return Array.from(state.tasks.values())
          .filter((row) => claimable(row, now) && (options.models?.includes(row.record.model) ?? true))
          .sort((a, b) => a.record.createdAt.getTime() - b.record.createdAt.getTime() || a.seq - b.seq)
          .slice(0, options.limit)
          .map((row): TaskStore.Claim => {
            row.leaseToken = randomUUID()
            row.leaseExpiresAt = now + options.leaseMs
            row.record = { ...row.record, attempts: row.record.attempts + 1 }
            return { task: row.record, leaseToken: row.leaseToken, leaseExpiresAt: new Date(row.leaseExpiresAt) }
          })
      }),
    renew: (taskId, leaseToken, until) =>
      Effect.sync(() => {
        const row = state.tasks.get(taskId)
        if (row === undefined || row.leaseToken !== leaseToken) return false
        row.leaseExpiresAt = until.getTime()
        return true
      }),
    transition: (request) => Effect.sync(() => transition(request)),
    transitionAll: (requests) => Effect.sync(() => requests.map(transition)),
    listByStatus: (status, limit, afterId) =>
      Effect.sync(() =>
        Array.from(state.tasks.values(), (row) => row.record)
          .filter((task) => task.status === status && (afterId === undefined || task.id > afterId))
          .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
          .slice(0, limit)
      ),
    takeSlots: (request) => Effect.sync(() => takeSlots(request)),
    releaseSlots: ({ taskId, leaseToken, lanes }) =>
      Effect.sync(() => {
        for (const lane of lanes) {
          const slots = state.slots.get(lane) ?? []
          slots.forEach((holder, i) => {
            if (holder?.taskId === taskId && holder.leaseToken === leaseToken) slots[i] = undefined
          })
        }
      }),
    listHeld: (limit, afterId) =>
      Effect.sync(() =>
        Array.from(state.tasks.values())
          .filter((row) => row.record.status === "reconciliation_required" && (afterId === undefined || row.record.id > afterId))
          .sort((a, b) => (a.record.id < b.record.id ? -1 : a.record.id > b.record.id ? 1 : 0))
          .slice(0, limit)
          .map((row) => ({ task: row.record, upstreamAnswer: row.upstreamAnswer }))
      ),
    noteUpstream: (taskId, upstreamRef) =>
      Effect.sync(() => {
        const row = state.tasks.get(taskId)
        if (row === undefined || row.record.upstreamRef !== null) return false
        if (row.record.status !== "submitting" && row.record.status !== "reconciliation_required") return false
        row.record = { ...row.record, upstreamRef }
        return true
      }),
    noteProgress: (taskId, progress) =>
      Effect.sync(() => {
        const row = state.tasks.get(taskId)
        if (row === undefined || row.record.status !== "running" || row.record.progress === progress) return false
        row.record = { ...row.record, progress }
        state.statuses.wake([{ taskId, status: undefined }])
        return true
      }),
    cancel: (accountId, taskId, now) =>
      Effect.sync((): TaskStore.CancelResult | undefined => {
        const row = state.tasks.get(taskId)
        if (row === undefined || row.record.accountId !== accountId) return undefined
        if (row.record.status === "queued") {
          settle(row, "failed", undefined, now)
          row.record = { ...row.record, status: "failed", errorCode: TaskErrorCode.Canceled, updatedAt: now }
          row.leaseToken = null
          row.leaseExpiresAt = null
          enqueue(state, row.record)
          state.statuses.wake([{ taskId, status: "failed" }])
          return { _tag: "Canceled", task: row.record }
        }
        if (TaskStatus.isUnfinished(row.record.status)) {
          if (row.record.cancelRequestedAt === null) row.record = { ...row.record, cancelRequestedAt: now }
          return { _tag: "Requested", task: row.record }
        }
        return TaskStore.finishedCancel(row.record)
      }),
    resolve: (resolution) =>
      Effect.sync(() => {
        const row = state.tasks.get(resolution.taskId)
        if (row === undefined || row.record.status !== (resolution.from ?? "reconciliation_required")) return undefined
        settle(row, resolution.to, resolution.chargeMicros, resolution.now, resolution.note)
        row.leaseToken = null
        row.leaseExpiresAt = null
        row.record = {
          ...row.record,
          status: resolution.to,
          updatedAt: resolution.now,
          ...(resolution.errorCode === undefined ? {} : { errorCode: resolution.errorCode }),
          ...(resolution.upstreamRef === undefined ? {} : { upstreamRef: resolution.upstreamRef }),
          ...(resolution.assets === undefined ? {} : { assets: resolution.assets }),
          ...(resolution.to === "succeeded" ? { chargedMicros: resolution.chargeMicros ?? null } : {})
        }
        enqueue(state, row.record)
        state.statuses.wake([{ taskId: resolution.taskId, status: resolution.to }])
        return row.record
      }),
    watchStatus: (taskId) => state.statuses.watch(taskId),
    holdStream: (accountId, limit) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          const open = state.streams.get(accountId) ?? 0
          if (open >= limit) return false
          state.streams.set(accountId, open + 1)
          return true
        }),
        (held) =>
          Effect.sync(() => {
            if (!held) return
            const left = (state.streams.get(accountId) ?? 1) - 1
            if (left === 0) state.streams.delete(accountId)
            else state.streams.set(accountId, left)
          })
      ),
    awaitWork: (maxWaitMs) => Effect.suspend(() => Effect.race(Deferred.await(state.wake), Effect.sleep(maxWaitMs)))
  })
}
