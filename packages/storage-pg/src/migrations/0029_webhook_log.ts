/**
 * The webhook delivery log read per task and purged by age: `finished_at` is when a delivery was
 * delivered or failed (null while pending; rows finished before are given their last attempt's
 * time, or their creation), `webhook_deliveries_task_newest` serves GET /api/v1/jobs/{id}/
 * webhook-deliveries and `webhook_deliveries_finished` the housekeeping purge, oldest finish first.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `ALTER TABLE webhook_deliveries ADD COLUMN finished_at timestamptz`,
  `UPDATE webhook_deliveries w SET finished_at = coalesce(
    (SELECT max(a.at + a.latency_ms * interval '1 millisecond') FROM webhook_attempts a WHERE a.delivery_id = w.id),
    w.created_at)
  WHERE w.status <> 'pending'`,
  `ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_finished_when_done
    CHECK ((status = 'pending') = (finished_at IS NULL))`,
  `CREATE INDEX webhook_deliveries_task_newest ON webhook_deliveries (task_id, seq DESC)`,
  `COMMENT ON INDEX webhook_deliveries_task_newest IS 'Serves GET /api/v1/jobs/{id}/webhook-deliveries: a task''s deliveries newest first.'`,
  `CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE finished_at IS NOT NULL`,
  `COMMENT ON INDEX webhook_deliveries_finished IS 'Serves housekeeping: purgeFinished, the oldest finished deliveries first.'`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
