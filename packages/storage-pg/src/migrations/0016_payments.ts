/**
 * Payments: the processor's events kept (`payment_events`, applied or with the problem that
 * stops them), the payments they granted (one row per processor payment id, the unique key of
 * its grant), their disputes, and the ledger entries each payment made (`payment_entries`).
 * `taskmeter_payment_event` keeps and applies one event in one statement (see PaymentStore).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const statements = [
  `CREATE TABLE payments (
    processor text NOT NULL,
    payment_id text NOT NULL,
    account_id text NOT NULL REFERENCES accounts (id),
    amount_micros bigint NOT NULL CHECK (amount_micros > 0),
    refunded_micros bigint NOT NULL DEFAULT 0 CHECK (refunded_micros >= 0),
    held_micros bigint NOT NULL DEFAULT 0 CHECK (held_micros >= 0),
    created_at timestamptz NOT NULL,
    PRIMARY KEY (processor, payment_id)
  )`,
  `CREATE INDEX payments_account_newest ON payments (account_id, created_at DESC)`,
  `CREATE TABLE payment_disputes (
    processor text NOT NULL,
    dispute_id text NOT NULL,
    payment_id text NOT NULL,
    amount_micros bigint NOT NULL CHECK (amount_micros > 0),
    status text NOT NULL CHECK (status IN ('open', 'won', 'lost')),
    PRIMARY KEY (processor, dispute_id),
    FOREIGN KEY (processor, payment_id) REFERENCES payments (processor, payment_id)
  )`,
  `CREATE TABLE payment_events (
    processor text NOT NULL,
    event_id text NOT NULL,
    payment_id text NOT NULL,
    event jsonb NOT NULL,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    received_at timestamptz NOT NULL,
    applied_at timestamptz,
    problem text,
    PRIMARY KEY (processor, event_id),
    CHECK ((applied_at IS NULL) = (problem IS NOT NULL))
  )`,
  `CREATE INDEX payment_events_newest ON payment_events (seq DESC)`,
  `CREATE INDEX payment_events_unapplied ON payment_events (processor, payment_id, seq) WHERE applied_at IS NULL`,
  `CREATE TABLE payment_entries (
    entry_id text PRIMARY KEY REFERENCES ledger_entries (id),
    processor text NOT NULL,
    payment_id text NOT NULL,
    reason text NOT NULL CHECK (reason IN ('purchase', 'refund', 'hold', 'release', 'dispute_lost')),
    FOREIGN KEY (processor, payment_id) REFERENCES payments (processor, payment_id)
  )`,
  `CREATE INDEX payment_entries_payment ON payment_entries (processor, payment_id)`,

  // One ledger entry for a payment, through taskmeter_credit (its external reference makes it once).
  `CREATE FUNCTION taskmeter_payment_entry(
    p_kind text, p_account_id text, p_amount_micros bigint, p_note text, p_ref text, p_at timestamptz,
    p_processor text, p_payment_id text, p_reason text
  ) RETURNS void
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_entry_id text;
  BEGIN
    SELECT (c.entry).id INTO v_entry_id
      FROM taskmeter_credit(p_kind, p_account_id, p_amount_micros, p_note, p_processor || ':' || p_ref, p_at) c;
    INSERT INTO payment_entries (entry_id, processor, payment_id, reason)
      VALUES (v_entry_id, p_processor, p_payment_id, p_reason)
      ON CONFLICT DO NOTHING;
  END
  $fn$`,

  // Keeps the event (once per processor and event id) and applies it unless applied: locks the
  // event row, then the payment's, then (in taskmeter_credit) the account's. Returns the kept row.
  `CREATE FUNCTION taskmeter_payment_event(p_event jsonb, p_at timestamptz)
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
          PERFORM taskmeter_payment_entry('grant', v_payment.account_id, v_amount, v_named || ': top-up',
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
          PERFORM taskmeter_payment_entry('refund', v_payment.account_id, v_amount - v_payment.refunded_micros,
            v_named || ': refund', v_payment_id || ':refunded:' || v_amount, p_at, v_processor, v_payment_id, 'refund');
        END IF;
      ELSIF v_tag = 'DisputeOpened' THEN
        INSERT INTO payment_disputes (processor, dispute_id, payment_id, amount_micros, status)
          VALUES (v_processor, v_kept.event->>'disputeId', v_payment_id, v_amount, 'open')
          ON CONFLICT DO NOTHING;
        IF FOUND THEN
          UPDATE payments p SET held_micros = p.held_micros + v_amount
            WHERE p.processor = v_processor AND p.payment_id = v_payment_id;
          PERFORM taskmeter_payment_entry('adjustment', v_payment.account_id, -v_amount,
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
          PERFORM taskmeter_payment_entry('adjustment', v_payment.account_id, v_dispute.amount_micros,
            v_named || ': dispute ' || v_dispute.dispute_id || CASE v_tag WHEN 'DisputeLost' THEN ' lost' ELSE ' won' END
              || ', hold released',
            v_dispute.dispute_id || ':release', p_at, v_processor, v_payment_id, 'release');
          IF v_tag = 'DisputeLost' THEN
            PERFORM taskmeter_payment_entry('refund', v_payment.account_id, v_dispute.amount_micros,
              v_named || ': dispute ' || v_dispute.dispute_id || ' lost',
              v_dispute.dispute_id || ':lost', p_at, v_processor, v_payment_id, 'dispute_lost');
          END IF;
        END IF;
      END IF;
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
