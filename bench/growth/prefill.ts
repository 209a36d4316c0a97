/**
 * The growth bench's prefill: set-based SQL that fills a migrated database with `tasks` finished
 * tasks shaped like real ones, created evenly over the 30 days before `at` and in time order: 80%
 * in one big account, 20% spread over 1,000 small ones; each task with its reserve entry and its
 * charge (succeeded, 11 in 12) or release (failed) entry, a result record for each succeeded task
 * (named in its assets, expiring 30 days after it was stored), and an Idempotency-Key for the
 * tasks of the last day and ten minutes (older keys are purged by then). Housekeeping is left as
 * an hourly orphan sweep leaves it: its mark at the last result stored two hours before `at`.
 * Ids are UUID v7 of their row's time when the database makes them (`taskmeter_uuidv7` exists),
 * else random v4. Accounts' cached balances are set from their journal at the end.
 *
 * Heap layout: tasks are admitted at their queued size and settled (a new, larger version) 64
 * admissions later, committing as they go, as workers settle them, and `tasks` is vacuumed after
 * every chunk, as autovacuum does, so that later admissions reuse the room the queued versions
 * left: the pages hold what organic growth leaves in them, not rows written at their final size.
 *
 * Speed: each transaction runs with `session_replication_role = replica` (no foreign-key trigger
 * per row: the rows reference what this prefill wrote) and `synchronous_commit = off`. Every
 * index stays in place and is written row by row in time order, as by organic growth, so the
 * indexes have the shape (and size) that months of traffic give them. Needs a superuser.
 */
import type { SqlClient } from "effect/sql"
import { Effect } from "effect"

export const DAYS = 30
export const SMALL_ACCOUNTS = 1_000
/** Tasks written between two vacuums of `tasks`: the unit of progress. */
const CHUNK = 100_000
const PRICE = 40_000
/** Tasks admitted between a task's admission and its settlement: the work in flight. */
const STEP = 64
const MODELS = ["picgen-2-0-text-to-image-economy", "alpha-pro-text-to-image-economy", "song-lyrics", "alpha-pro-edit-economy"]

export interface Target {
  readonly bigAccountId: string
  readonly bigKeyId: string
  readonly tasks: number
  readonly orderedIds: boolean
  /** The prefill's "now": the newest task is created just before it. */
  readonly at: Date
}

/** `uuid` made for time `ts`: v7 (time first) or v4 (random). */
const uuidAt = (ordered: boolean, ts: string) =>
  ordered
    ? `encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) PLACING substring(int8send(floor(extract(epoch FROM ${ts}) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid`
    : "gen_random_uuid()"

/** The loading session's settings, for one transaction. */
const loading = [`SET LOCAL session_replication_role = replica`, `SET LOCAL synchronous_commit = off`]

const smallAccounts = (target: Target, now: string) => [
  `INSERT INTO accounts (id, name, created_at)
   SELECT 'acct_' || ${uuidAt(target.orderedIds, "s.at")}, 'small ' || n, s.at
   FROM generate_series(1, ${SMALL_ACCOUNTS}) n, LATERAL (SELECT ${now} - interval '${DAYS + 1} days' + n * interval '1 second' AS at) s`,
  `INSERT INTO ledger_entries (id, account_id, kind, amount_micros, note, created_at)
   SELECT 'entry_' || ${uuidAt(target.orderedIds, "a.created_at")}, a.id, 'grant', 1000000000000, 'bench', a.created_at
   FROM accounts a WHERE a.name LIKE 'small %' ORDER BY a.seq`,
  `CREATE TABLE bench_small AS SELECT row_number() OVER (ORDER BY seq) - 1 AS n, id FROM accounts WHERE name LIKE 'small %'`
]

/** The statements making the table of tasks [from, to) of `target.tasks`, read by the others. */
const chunkRows = (target: Target, now: string, from: number, to: number) => {
  const ordered = target.orderedIds
  const model = `(ARRAY[${MODELS.map((m) => `'${m}'`).join(",")}])[1 + i % ${MODELS.length}]`
  return [
    `CREATE UNLOGGED TABLE bench_chunk AS
     SELECT i, t.at, t.at + interval '20 seconds' AS done_at,
       CASE WHEN i % 5 = 0 THEN sm.id ELSE '${target.bigAccountId}' END AS account_id,
       CASE WHEN i % 5 = 0 THEN NULL ELSE '${target.bigKeyId}' END AS api_key_id,
       i % 12 <> 0 AS succeeded,
       'task_' || ${uuidAt(ordered, "t.at")} AS task_id,
       (${uuidAt(ordered, "t.at + interval '20 seconds'")})::text AS result_id,
       ${model} AS model
     FROM generate_series(${from}, ${to - 1}) i
     CROSS JOIN LATERAL (SELECT ${now} - interval '${DAYS} days' + (i::float8 / ${Math.max(target.tasks, 1)}) * interval '${DAYS} days' - interval '20 seconds' AS at) t
     JOIN bench_small sm ON sm.n = (i / 5) % ${SMALL_ACCOUNTS}`,
    `CREATE INDEX ON bench_chunk (i)`,
    `ANALYZE bench_chunk`
  ]
}

/**
 * The tasks of the chunk as workers leave them, one statement run outside a transaction: each step
 * admits STEP tasks at their queued size, settles the step before and commits. A settled row is a
 * new version (status is indexed: never HOT), placed on its page if it fits, else on the page the
 * session inserts into; the queued version it replaces is pruned when a later update reads its page
 * and removed from the indexes bottom-up, as between real transactions.
 */
const chunkTasks = (from: number, to: number) =>
  `DO $$ BEGIN
     SET session_replication_role = replica;
     SET synchronous_commit = off;
     FOR s IN 0..${Math.ceil((to - from) / STEP)} LOOP
       INSERT INTO tasks (id, account_id, api_key_id, model, input, status, price_micros, unit_micros, quantity,
         settlement, created_at, updated_at, deadline_at)
       SELECT c.task_id, c.account_id, c.api_key_id, c.model,
         jsonb_build_object('prompt', 'a lighthouse keeper at dusk, waves on the rocks, study number ' || c.i),
         'queued', ${PRICE}, ${PRICE}, 1, 'fixed', c.at, c.at, c.at + interval '10 minutes'
       FROM bench_chunk c WHERE c.i >= ${from} + s * ${STEP} AND c.i < ${from} + (s + 1) * ${STEP} ORDER BY c.i;
       UPDATE tasks t SET
         status = CASE WHEN c.succeeded THEN 'succeeded' ELSE 'failed' END,
         error_code = CASE WHEN c.succeeded THEN NULL ELSE 'PROVIDER_ERROR' END,
         charged_micros = CASE WHEN c.succeeded THEN ${PRICE} END,
         assets = CASE WHEN c.succeeded
           THEN jsonb_build_array(jsonb_build_object('id', 'asset_0', 'type', 'image', 'resultId', c.result_id,
             'mimeType', 'image/png', 'metadata', jsonb_build_object('width', 1024, 'height', 1024, 'simulated', true)))
           ELSE '[]'::jsonb END,
         upstream_ref = 'sim-' || c.i, attempts = 1, updated_at = c.done_at, provider = 'simulated'
       FROM bench_chunk c
       WHERE c.i >= ${from} + (s - 1) * ${STEP} AND c.i < ${from} + s * ${STEP} AND t.id = c.task_id;
       COMMIT;
     END LOOP;
     RESET session_replication_role;
     RESET synchronous_commit;
   END $$`

/** The statements writing the results, ledger entries and keys of the chunk's tasks, then dropping its table. */
const chunkRest = (target: Target, now: string) => {
  const ordered = target.orderedIds
  return [
    `INSERT INTO results (id, account_id, task_id, content_type, size_bytes, sha256, blob_key, created_at, expires_at)
     SELECT c.result_id, c.account_id, c.task_id, 'image/png', 1200000 + c.i % 100000, md5(c.task_id) || md5(c.result_id),
       'results/' || c.result_id, c.done_at, c.done_at + interval '${DAYS} days'
     FROM bench_chunk c WHERE c.succeeded ORDER BY c.i`,
    `INSERT INTO ledger_entries (id, account_id, kind, amount_micros, task_id, created_at)
     SELECT 'entry_' || ${uuidAt(ordered, "e.at")}, c.account_id, e.kind, ${PRICE}, c.task_id, e.at
     FROM bench_chunk c
     CROSS JOIN LATERAL (VALUES (0, 'reserve', c.at), (1, CASE WHEN c.succeeded THEN 'charge' ELSE 'release' END, c.done_at))
       AS e(step, kind, at)
     ORDER BY e.at, c.i, e.step`,
    `INSERT INTO idempotency_keys (account_id, idempotency_key, request_fingerprint, task_id, expires_at)
     SELECT c.account_id, 'bench-' || c.i, md5(c.task_id) || md5(c.account_id), c.task_id, c.at + interval '1 day'
     FROM bench_chunk c WHERE c.at > ${now} - interval '1 day 10 minutes' ORDER BY c.i`,
    `DROP TABLE bench_chunk`
  ]
}

/** Accounts' cached balances from their journal, housekeeping as an hourly sweep leaves it, the helper table dropped. */
const settle = (now: string) => [
  `UPDATE accounts a SET balance_micros = j.balance, reserved_micros = j.reserved
   FROM (SELECT account_id,
       sum(CASE kind WHEN 'grant' THEN amount_micros WHEN 'adjustment' THEN amount_micros
         WHEN 'refund' THEN -amount_micros WHEN 'charge' THEN -amount_micros ELSE 0 END) AS balance,
       sum(CASE kind WHEN 'reserve' THEN amount_micros WHEN 'charge' THEN -amount_micros
         WHEN 'release' THEN -amount_micros ELSE 0 END) AS reserved
     FROM ledger_entries GROUP BY account_id) j
   WHERE a.id = j.account_id`,
  `UPDATE sweep_marks m SET created_at = r.created_at, id = r.id
   FROM (SELECT created_at, id FROM results WHERE created_at < ${now} - interval '2 hours' ORDER BY created_at DESC, id DESC LIMIT 1) r
   WHERE m.name = 'orphan_results'`,
  `DROP TABLE bench_small`
]

/** Fills the database to `target.tasks`, reporting tasks written after each chunk. */
export const prefill = (sql: SqlClient.SqlClient, target: Target, progress: (written: number) => void) =>
  Effect.gen(function* () {
    const now = `'${target.at.toISOString()}'::timestamptz`
    const run = (statements: ReadonlyArray<string>) =>
      sql.withTransaction(Effect.forEach([...loading, ...statements], (statement) => sql.unsafe(statement).unprepared))
    yield* run(smallAccounts(target, now))
    for (let from = 0; from < target.tasks; from += CHUNK) {
      const to = Math.min(target.tasks, from + CHUNK)
      yield* run(chunkRows(target, now, from, to))
      yield* sql.unsafe(chunkTasks(from, to)).unprepared
      yield* run(chunkRest(target, now))
      yield* sql.unsafe("VACUUM (INDEX_CLEANUP OFF) tasks").unprepared
      progress(to)
    }
    yield* run(settle(now))
  })
