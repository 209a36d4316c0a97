/**
 * Storage port for operations: whether the store answers with the schema this release expects
 * (readiness), how many unfinished tasks wait by status and model, and how much of its connection
 * pool this process uses. Each a cheap, bounded read that never writes; read at /readyz and scrapes.
 */
import { Context, Data, type Effect } from "effect"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import type { TaskStatus } from "../domain/TaskStatus.ts"

/** The store answers, but its schema lacks migrations this release has. */
export class MigrationsBehind extends Data.TaggedError("MigrationsBehind")<{
  readonly message: string
}> {}

/** Unfinished tasks of one status and model. */
export interface QueueDepth {
  readonly status: TaskStatus
  readonly model: string
  readonly tasks: number
}

/** This process's database connections: in use now, and the most it opens. */
export interface Connections {
  readonly inUse: number
  readonly max: number
}

export class StoreHealth extends Context.Service<
  StoreHealth,
  {
    readonly check: Effect.Effect<void, StoreUnavailable | MigrationsBehind>
    /** Tasks in queued, submitting, running and reconciliation_required, counted by status and model. */
    readonly queueDepth: Effect.Effect<ReadonlyArray<QueueDepth>, StoreUnavailable>
    /** Undefined for a store that does not report them (in memory, the embedded PGlite). */
    readonly connections: Effect.Effect<Connections | undefined>
  }
>()("@taskmeter/kernel/StoreHealth") {}

/** The statuses `queueDepth` counts. */
export const UNFINISHED: ReadonlyArray<TaskStatus> = ["queued", "submitting", "running", "reconciliation_required"]
