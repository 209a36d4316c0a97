/**
 * Webhooks for payment events and `task.running`: the event types widened (endpoints, a
 * submission's own webhook, deliveries); a delivery is about a task (`task_id`, `task`) or a
 * payment (`payment_id`, `payment`: the kernel's PaymentWebhook.PaymentData as JSON), never both;
 * `taskmeter_payment_entry` answers the entry's id, and `taskmeter_payment_event` writes the
 * deliveries of an event that changed the credits in the statement that applies it, to the
 * account's enabled endpoints that subscribe to its type (exactly once: a repeated event changes
 * nothing). Per-endpoint and per-task logs read the same rows (their indexes unchanged).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const taskEvents = `'task.running', 'task.succeeded', 'task.failed', 'task.reconciliation_required'`
const events = `ARRAY[${taskEvents}, 'payment.succeeded', 'payment.refunded', 'payment.disputed', 'payment.dispute_closed']::text[]`

const statements = [
  `ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_events_check,
    ADD CONSTRAINT webhook_endpoints_events_check CHECK (cardinality(events) > 0 AND events <@ ${events})`,
  `ALTER TABLE task_webhooks DROP CONSTRAINT task_webhooks_events_check,
    ADD CONSTRAINT task_webhooks_events_check CHECK (events <@ ARRAY[${taskEvents}]::text[])`,
  `ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_type_check,
    ADD CONSTRAINT webhook_deliveries_event_type_check CHECK (event_type = ANY (${events})),
    ALTER COLUMN task_id DROP NOT NULL,
    ALTER COLUMN task DROP NOT NULL,
    ADD COLUMN payment_id text,
    ADD COLUMN payment jsonb,
    ADD CONSTRAINT webhook_deliveries_one_subject CHECK (
      (task_id IS NOT NULL AND task IS NOT NULL AND payment_id IS NULL AND payment IS NULL)
      OR (task_id IS NULL AND task IS NULL AND payment_id IS NOT NULL AND payment IS NOT NULL AND endpoint_id IS NOT NULL))`,
  `DROP FUNCTION taskmeter_payment_entry(text, text, bigint, text, text, timestamptz, text, text, text)`,
  // One ledger entry for a payment, through taskmeter_credit (its external reference makes it once); its id.
  `CREATE FUNCTION taskmeter_payment_entry(
    p_kind text, p_account_id text, p_amount_micros bigint, p_note text, p_ref text, p_at timestamptz,
    p_processor text, p_payment_id text, p_reason text
  ) RETURNS text
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_entry_id text;
  BEGIN
    SELECT (c.entry).id INTO v_entry_id
      FROM taskmeter_credit(p_kind, p_account_id, p_amount_micros, p_note, p_processor || ':' || p_ref, p_at) c;
    INSERT INTO payment_entries (entry_id, processor, payment_id, reason)
      VALUES (v_entry_id, p_processor, p_payment_id, p_reason)
      ON CONFLICT DO NOTHING;
    RETURN v_entry_id;
  END
  $fn$`,

  // As in migration 0016, and then the event's webhook deliveries.
  `CREATE OR REPLACE FUNCTION taskmeter_payment_event(p_event jsonb, p_at timestamptz)
  RETURNS SETOF payment_events
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_processor text := p_event->>'processor';
    v_payment_id text := p_event->>'paymentId';
    v_tag text := p_event->>'_tag';
    v_named text := (p_event->>'processor') || ' payment ' || (p_event->>'paymentId');
    v_kept payment_events;
    v_payment payments;
    v_dispute payment_disputes;
    v_amount bigint;
    v_problem text;
    v_entries text[] := ARRAY[]::text[];
    v_type text;
  BEGIN
    INSERT INTO payment_events (processor, event_id, payment_id, event, received_at, problem)
      VALUES (v_processor, p_event->>'eventId', v_payment_id, p_event, p_at, 'not applied yet')
      ON CONFLICT DO NOTHING;
    SELECT * INTO v_kept FROM payment_events e
      WHERE e.processor = v_processor AND e.event_id = p_event->>'eventId' FOR UPDATE;
    IF v_kept.applied_at IS NOT NULL THEN
      RETURN NEXT v_kept;
      RETURN;
    END IF;

    v_amount := CASE v_tag WHEN 'Refunded' THEN (v_kept.event->>'refundedMicros')::bigint
      ELSE (v_kept.event->>'amountMicros')::bigint END;
    IF v_tag <> 'PurchaseFailed' AND (v_amount IS NULL OR v_amount < CASE v_tag WHEN 'Refunded' THEN 0 ELSE 1 END) THEN
      v_problem := 'invalid amount ' || coalesce(v_amount::text, 'null');
    ELSIF v_tag = 'PurchaseCompleted' THEN
      IF NOT EXISTS (SELECT 1 FROM accounts a WHERE a.id = v_kept.event->>'accountId') THEN
        v_problem := 'no account ' || (v_kept.event->>'accountId');
      ELSE
        INSERT INTO payments (processor, payment_id, account_id, amount_micros, created_at)
          VALUES (v_processor, v_payment_id, v_kept.event->>'accountId', v_amount, p_at)
          ON CONFLICT DO NOTHING
          RETURNING * INTO v_payment;
        IF FOUND THEN
          v_entries := v_entries || taskmeter_payment_entry('grant', v_payment.account_id, v_amount, v_named || ': top-up',
            v_payment_id, p_at, v_processor, v_payment_id, 'purchase');
        END IF;
      END IF;
    ELSIF v_tag <> 'PurchaseFailed' THEN
      SELECT * INTO v_payment FROM payments p
        WHERE p.processor = v_processor AND p.payment_id = v_payment_id FOR UPDATE;
      IF NOT FOUND THEN
        v_problem := 'payment ' || v_payment_id || ' not applied yet';
      ELSIF v_tag = 'Refunded' THEN
        IF v_amount > v_payment.refunded_micros THEN
          UPDATE payments p SET refunded_micros = v_amount
            WHERE p.processor = v_processor AND p.payment_id = v_payment_id;
          v_entries := v_entries || taskmeter_payment_entry('refund', v_payment.account_id, v_amount - v_payment.refunded_micros,
            v_named || ': refund', v_payment_id || ':refunded:' || v_amount, p_at, v_processor, v_payment_id, 'refund');
        END IF;
      ELSIF v_tag = 'DisputeOpened' THEN
        INSERT INTO payment_disputes (processor, dispute_id, payment_id, amount_micros, status)
          VALUES (v_processor, v_kept.event->>'disputeId', v_payment_id, v_amount, 'open')
          ON CONFLICT DO NOTHING;
        IF FOUND THEN
          UPDATE payments p SET held_micros = p.held_micros + v_amount
            WHERE p.processor = v_processor AND p.payment_id = v_payment_id;
          v_entries := v_entries || taskmeter_payment_entry('adjustment', v_payment.account_id, -v_amount,
            v_named || ': dispute ' || (v_kept.event->>'disputeId') || ' opened, amount held',
            (v_kept.event->>'disputeId') || ':hold', p_at, v_processor, v_payment_id, 'hold');
        END IF;
      ELSE
        SELECT * INTO v_dispute FROM payment_disputes d
          WHERE d.processor = v_processor AND d.dispute_id = v_kept.event->>'disputeId' FOR UPDATE;
        IF NOT FOUND THEN
          v_problem := 'dispute ' || (v_kept.event->>'disputeId') || ' not opened yet';
        ELSIF v_dispute.status = 'open' THEN
          UPDATE payment_disputes d SET status = CASE v_tag WHEN 'DisputeLost' THEN 'lost' ELSE 'won' END
            WHERE d.processor = v_processor AND d.dispute_id = v_dispute.dispute_id;
          UPDATE payments p SET held_micros = p.held_micros - v_dispute.amount_micros
            WHERE p.processor = v_processor AND p.payment_id = v_payment_id;
          v_entries := v_entries || taskmeter_payment_entry('adjustment', v_payment.account_id, v_dispute.amount_micros,
            v_named || ': dispute ' || v_dispute.dispute_id || CASE v_tag WHEN 'DisputeLost' THEN ' lost' ELSE ' won' END
              || ', hold released',
            v_dispute.dispute_id || ':release', p_at, v_processor, v_payment_id, 'release');
          IF v_tag = 'DisputeLost' THEN
            v_entries := v_entries || taskmeter_payment_entry('refund', v_payment.account_id, v_dispute.amount_micros,
              v_named || ': dispute ' || v_dispute.dispute_id || ' lost',
              v_dispute.dispute_id || ':lost', p_at, v_processor, v_payment_id, 'dispute_lost');
          END IF;
        END IF;
      END IF;
    END IF;

    -- The payment webhook (kernel PaymentWebhook), only when the event changed the credits.
    IF v_problem IS NULL AND cardinality(v_entries) > 0 THEN
      SELECT * INTO v_payment FROM payments p WHERE p.processor = v_processor AND p.payment_id = v_payment_id;
      SELECT * INTO v_dispute FROM payment_disputes d
        WHERE d.processor = v_processor AND d.dispute_id = v_kept.event->>'disputeId';
      v_type := CASE v_tag WHEN 'PurchaseCompleted' THEN 'payment.succeeded' WHEN 'Refunded' THEN 'payment.refunded'
        WHEN 'DisputeOpened' THEN 'payment.disputed' ELSE 'payment.dispute_closed' END;
      INSERT INTO webhook_deliveries (id, account_id, endpoint_id, url, payment_id, event_type, payment, occurred_at,
        status, due_at, next_attempt_at, created_at)
      SELECT 'msg_' || gen_random_uuid(), e.account_id, e.id, e.url, v_payment_id, v_type,
        jsonb_build_object('id', v_payment_id, 'processor', v_processor, 'amountMicros', v_payment.amount_micros,
          'refundedMicros', v_payment.refunded_micros, 'heldMicros', v_payment.held_micros,
          'createdAt', v_payment.created_at,
          'dispute', CASE WHEN v_dispute.dispute_id IS NOT NULL THEN jsonb_build_object('id', v_dispute.dispute_id,
            'amountMicros', v_dispute.amount_micros, 'status', v_dispute.status) END,
          'ledgerEntryIds', to_jsonb(v_entries)),
        p_at, 'pending', p_at, p_at, p_at
      FROM webhook_endpoints e
      WHERE e.account_id = v_payment.account_id AND e.enabled AND v_type = ANY (e.events);
    END IF;

    UPDATE payment_events e
      SET applied_at = CASE WHEN v_problem IS NULL THEN p_at END, problem = v_problem
      WHERE e.processor = v_processor AND e.event_id = v_kept.event_id
      RETURNING * INTO v_kept;
    RETURN NEXT v_kept;
  END
  $fn$`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement).unprepared
})
