/**
 * WebhookStore in memory, and `enqueue`, which the memory TaskStore calls in the same step as a
 * task's move: one delivery per matching enabled endpoint and one for the task's own webhook; and
 * `enqueuePayment`, which the memory PaymentStore calls in the same step as an applied event.
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { WebhookEvent, WebhookStore } from "@taskmeter/kernel"
import type { Ids, PaymentWebhook, TaskStore } from "@taskmeter/kernel"
import type { DeliveryRow, State } from "./State.ts"

interface Subject {
  readonly accountId: Ids.AccountId
  readonly at: Date
  readonly task: TaskStore.TaskRecord | null
  readonly payment: PaymentWebhook.PaymentData | null
}

const newDelivery = (
  state: State,
  subject: Subject,
  type: WebhookEvent.EventType,
  target: { readonly endpointId: string | null; readonly url: string }
): DeliveryRow => ({
  delivery: {
    id: `msg_${randomUUID()}`,
    accountId: subject.accountId,
    endpointId: target.endpointId,
    url: target.url,
    taskId: subject.task?.id ?? null,
    paymentId: subject.payment?.id ?? null,
    type,
    occurredAt: subject.at,
    status: "pending",
    attempts: [],
    nextAttemptAt: subject.at,
    createdAt: subject.at
  },
  task: subject.task,
  payment: subject.payment,
  leaseToken: null,
  dueAt: subject.at.getTime(),
  roundAttempts: 0,
  finishedAt: null,
  seq: state.nextSeq++
})

/** One delivery of the event per enabled endpoint of the account that subscribes to it. */
const toEndpoints = (state: State, subject: Subject, type: WebhookEvent.EventType): Array<DeliveryRow> => {
  const rows: Array<DeliveryRow> = []
  for (const endpoint of state.webhookEndpoints.values()) {
    if (endpoint.accountId === subject.accountId && endpoint.enabled && endpoint.events.includes(type)) {
      rows.push(newDelivery(state, subject, type, { endpointId: endpoint.id, url: endpoint.url }))
    }
  }
  return rows
}

/** The deliveries the task's move into its current status raises. */
export const enqueue = (state: State, task: TaskStore.TaskRecord): void => {
  const type = WebhookEvent.eventOf(task.status)
  if (type === undefined) return
  const subject: Subject = { accountId: task.accountId, at: task.updatedAt, task, payment: null }
  const rows = toEndpoints(state, subject, type)
  const own = state.taskWebhooks.get(task.id)
  if (own !== undefined && (own.events ?? WebhookEvent.defaultEvents).includes(type)) {
    rows.push(newDelivery(state, subject, type, { endpointId: null, url: own.url }))
  }
  for (const row of rows) state.deliveries.set(row.delivery.id, row)
}

/** The deliveries an applied payment event raises (PaymentWebhook), written by the payment store in the same step. */
export const enqueuePayment = (
  state: State,
  accountId: Ids.AccountId,
  type: WebhookEvent.PaymentEventType,
  payment: PaymentWebhook.PaymentData,
  at: Date
): void => {
  for (const row of toEndpoints(state, { accountId, at, task: null, payment }, type)) state.deliveries.set(row.delivery.id, row)
}

const secretsOf = (state: State, row: DeliveryRow, now: number): ReadonlyArray<string> => {
  if (row.delivery.endpointId === null) {
    const secret = state.webhookSecrets.get(row.delivery.accountId)
    return secret === undefined ? [] : [secret]
  }
  const endpoint = state.webhookEndpoints.get(row.delivery.endpointId)
  if (endpoint === undefined) return []
  const previous =
    endpoint.previousSecret !== null &&
    endpoint.previousSecretExpiresAt !== null &&
    endpoint.previousSecretExpiresAt.getTime() > now
      ? [endpoint.previousSecret]
      : []
  return [endpoint.secret, ...previous]
}

const owned = (state: State, accountId: Ids.AccountId, id: string) => {
  const endpoint = state.webhookEndpoints.get(id)
  return endpoint?.accountId === accountId ? endpoint : undefined
}

export const make = (state: State): WebhookStore.WebhookStore["Service"] => {
  const save = (endpoint: WebhookStore.Endpoint) => {
    state.webhookEndpoints.set(endpoint.id, endpoint)
    return endpoint
  }
  return WebhookStore.WebhookStore.of({
    createEndpoint: (request) =>
      Effect.sync(() =>
        save({
          id: request.id,
          accountId: request.accountId,
          url: request.url,
          events: request.events,
          enabled: true,
          disabledReason: null,
          secret: request.secret,
          previousSecret: null,
          previousSecretExpiresAt: null,
          failingSince: null,
          createdAt: request.now,
          updatedAt: request.now
        })
      ),
    listEndpoints: (accountId) =>
      Effect.sync(() => [...state.webhookEndpoints.values()].filter((endpoint) => endpoint.accountId === accountId)),
    getEndpoint: (accountId, id) => Effect.sync(() => owned(state, accountId, id)),
    updateEndpoint: (accountId, id, patch) =>
      Effect.sync(() => {
        const endpoint = owned(state, accountId, id)
        if (endpoint === undefined) return undefined
        return save({
          ...endpoint,
          ...(patch.url === undefined ? {} : { url: patch.url }),
          ...(patch.events === undefined ? {} : { events: patch.events }),
          ...(patch.enabled === undefined
            ? {}
            : patch.enabled
              ? { enabled: true, disabledReason: null, failingSince: null }
              : { enabled: false, disabledReason: patch.disabledReason ?? null }),
          updatedAt: patch.now
        })
      }),
    rotateSecret: (accountId, id, rotation) =>
      Effect.sync(() => {
        const endpoint = owned(state, accountId, id)
        if (endpoint === undefined) return undefined
        return save({
          ...endpoint,
          secret: rotation.secret,
          previousSecret: endpoint.secret,
          previousSecretExpiresAt: rotation.previousExpiresAt,
          updatedAt: rotation.now
        })
      }),
    deleteEndpoint: (accountId, id) =>
      Effect.sync(() => {
        if (owned(state, accountId, id) === undefined) return false
        state.webhookEndpoints.delete(id)
        for (const [key, row] of state.deliveries) if (row.delivery.endpointId === id) state.deliveries.delete(key)
        return true
      }),
    accountSecret: (accountId, candidate) =>
      Effect.sync(() => {
        const kept = state.webhookSecrets.get(accountId)
        if (kept !== undefined) return kept
        state.webhookSecrets.set(accountId, candidate)
        return candidate
      }),
    claim: ({ limit, leaseMs, now }) =>
      Effect.sync(() => {
        const at = now.getTime()
        const due = [...state.deliveries.values()]
          .filter((row) => row.delivery.status === "pending" && row.dueAt <= at)
          .sort((a, b) => a.dueAt - b.dueAt || a.seq - b.seq)
          .slice(0, Math.max(0, limit))
        return due.map((row): WebhookStore.DeliveryClaim => {
          row.leaseToken = randomUUID()
          row.dueAt = at + leaseMs
          const endpoint = row.delivery.endpointId === null ? undefined : state.webhookEndpoints.get(row.delivery.endpointId)
          return {
            delivery: row.delivery,
            task: row.task,
            payment: row.payment,
            leaseToken: row.leaseToken,
            attemptNumber: row.roundAttempts + 1,
            secrets: secretsOf(state, row, at),
            endpointEnabled: endpoint === undefined ? row.delivery.endpointId === null : endpoint.enabled
          }
        })
      }),
    recordRound: (records, now) =>
      Effect.sync(() => {
        // Per endpoint: the latest finished attempt of the round ([finished at, delivered]).
        const latest = new Map<string, readonly [number, boolean]>()
        const recorded = records.map((record) => {
          const row = state.deliveries.get(record.deliveryId)
          if (row === undefined || row.leaseToken !== record.leaseToken || row.delivery.status !== "pending") return undefined
          const { outcome, attempt } = record
          row.leaseToken = null
          if (attempt !== undefined) row.roundAttempts++
          row.dueAt = outcome._tag === "Retry" ? outcome.at.getTime() : Number.POSITIVE_INFINITY
          row.finishedAt = outcome._tag === "Retry" ? null : now.getTime()
          row.delivery = {
            ...row.delivery,
            status: outcome._tag === "Delivered" ? "delivered" : outcome._tag === "Failed" ? "failed" : "pending",
            attempts: attempt === undefined ? row.delivery.attempts : [...row.delivery.attempts, attempt],
            nextAttemptAt: outcome._tag === "Retry" ? outcome.at : null
          }
          const endpointId = row.delivery.endpointId
          if (endpointId !== null && attempt !== undefined) {
            const finished = attempt.at.getTime() + Math.round(attempt.latencyMs)
            const delivered = outcome._tag === "Delivered"
            const before = latest.get(endpointId)
            if (before === undefined || finished > before[0] || (finished === before[0] && delivered)) {
              latest.set(endpointId, [finished, delivered])
            }
          }
          return endpointId
        })
        for (const [endpointId, [, delivered]] of latest) {
          const endpoint = state.webhookEndpoints.get(endpointId)
          if (endpoint !== undefined) save({ ...endpoint, failingSince: delivered ? null : (endpoint.failingSince ?? now) })
        }
        return recorded.map((endpointId) => ({
          recorded: endpointId !== undefined,
          endpointFailingSince:
            endpointId === undefined || endpointId === null
              ? null
              : (state.webhookEndpoints.get(endpointId)?.failingSince ?? null)
        }))
      }),
    disableFailing: (endpointId, failingSince, reason, now) =>
      Effect.sync(() => {
        const endpoint = state.webhookEndpoints.get(endpointId)
        if (endpoint === undefined || !endpoint.enabled || endpoint.failingSince === null) return undefined
        if (endpoint.failingSince.getTime() > failingSince.getTime()) return undefined
        return save({ ...endpoint, enabled: false, disabledReason: reason, updatedAt: now })
      }),
    listDeliveries: (accountId, endpointId, limit, before) =>
      Effect.sync(() => {
        if (owned(state, accountId, endpointId) === undefined) return undefined
        const rows = [...state.deliveries.values()].filter((row) => row.delivery.endpointId === endpointId).reverse()
        const start = before === undefined ? 0 : rows.findIndex((row) => row.delivery.id === before) + 1
        if (before !== undefined && start === 0) return []
        return rows.slice(start, start + Math.max(0, limit)).map((row) => row.delivery)
      }),
    listTaskDeliveries: (accountId, taskId, limit, before) =>
      Effect.sync(() => {
        const rows = [...state.deliveries.values()]
          .filter((row) => row.delivery.accountId === accountId && row.delivery.taskId === taskId)
          .sort((a, b) => b.seq - a.seq)
        const start = before === undefined ? 0 : rows.findIndex((row) => row.delivery.id === before) + 1
        if (before !== undefined && start === 0) return []
        return rows.slice(start, start + Math.max(0, limit)).map((row) => row.delivery)
      }),
    purgeFinished: (finishedBefore, limit) =>
      Effect.sync(() => {
        const cutoff = finishedBefore.getTime()
        const due = [...state.deliveries.values()]
          .filter((row) => row.finishedAt !== null && row.finishedAt < cutoff)
          .sort((a, b) => a.finishedAt! - b.finishedAt! || a.seq - b.seq)
          .slice(0, Math.max(0, limit))
        for (const row of due) state.deliveries.delete(row.delivery.id)
        return due.length
      }),
    resend: (accountId, deliveryId, now) =>
      Effect.sync(() => {
        const row = state.deliveries.get(deliveryId)
        if (row === undefined || row.delivery.accountId !== accountId) return undefined
        row.leaseToken = null
        row.dueAt = now.getTime()
        row.roundAttempts = 0
        row.finishedAt = null
        row.delivery = { ...row.delivery, status: "pending", nextAttemptAt: now }
        return row.delivery
      })
  })
}
