/**
 * TaskStore.holdStream on PostgreSQL (migration 0037): an account's event streams counted across
 * every process sharing the database. Opening a stream takes a free slot below the account's limit
 * under a lease on the database's clock (one statement); this process renews the leases of all its
 * open streams in one statement every third of the lease, and frees a slot when its stream ends
 * (one statement, failures left to the lease). A process that stops renewing (it crashed) has its
 * slots lapse after `leaseMs` (packages/storage-pg/README.md, `stream_slots`).
 */
import { randomUUID } from "node:crypto"
import { Effect, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { TaskStore } from "@taskmeter/kernel"
import * as Failures from "./Failures.ts"

/** How long a slot outlives its process's last renewal, by default. */
export const DEFAULT_LEASE_MS = 30_000

interface Held {
  readonly accountId: string
  readonly slot: number
}

export const make = (leaseMs: number = DEFAULT_LEASE_MS) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const lease = `${Math.max(1, Math.round(leaseMs))} milliseconds`
    /** token -> the slot its stream holds */
    const held = new Map<string, Held>()

    const renew = Effect.suspend((): Effect.Effect<unknown, unknown> => {
      if (held.size === 0) return Effect.void
      const tokens = [...held.keys()]
      const slots = [...held.values()]
      return sql`UPDATE stream_slots s SET expires_at = clock_timestamp() + ${lease}::interval
        FROM unnest(${slots.map((h) => h.accountId)}::text[], ${slots.map((h) => h.slot)}::integer[], ${tokens}::text[])
          AS h(account_id, slot, token)
        WHERE s.account_id = h.account_id AND s.slot = h.slot AND s.token = h.token`
    })
    // A failed renewal is tried again at the next tick; a lease outlives two missed ones.
    yield* Effect.forkScoped(Effect.repeat(Effect.ignore(renew), Schedule.spaced(Math.max(1, Math.floor(leaseMs / 3)))))

    const take = (accountId: string, limit: number, token: string) =>
      Failures.run(
        "holdStream",
        sql<{ readonly slot: number | null }>`SELECT taskmeter_take_stream_slot(
          ${accountId}, ${limit}, ${token}, ${lease}::interval) AS slot`.pipe(Effect.map((rows) => rows[0]?.slot ?? null))
      )

    const release = (accountId: string, slot: number, token: string) =>
      Effect.ignore(sql`UPDATE stream_slots SET token = NULL, expires_at = NULL
        WHERE account_id = ${accountId} AND slot = ${slot} AND token = ${token}`)

    const holdStream: TaskStore.TaskStore["Service"]["holdStream"] = (accountId, limit) =>
      limit <= 0
        ? Effect.succeed(false)
        : Effect.map(
            Effect.acquireRelease(
              Effect.suspend(() => {
                const token = randomUUID()
                return Effect.map(take(accountId, limit, token), (slot) => {
                  if (slot !== null) held.set(token, { accountId, slot })
                  return { token, slot }
                })
              }),
              ({ token, slot }) => {
                if (slot === null) return Effect.void
                held.delete(token)
                return release(accountId, slot, token)
              }
            ),
            ({ slot }) => slot !== null
          )

    return holdStream
  })
