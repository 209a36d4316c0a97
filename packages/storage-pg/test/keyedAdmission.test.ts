/**
 * `taskmeter_admit_requests` (migration 0012) against the two steps it stands for: random
 * batches of keys' requests mixed with callers' requests, run once through the batch function
 * and once request by request, in request order: a key's as `taskmeter_authenticate_batch` of
 * that one request and then, if the key passes KeyCheck.refusal's rule, its one admission under
 * the key's account, id and usage limit; a caller's as its one admission. From the same starting
 * state both must answer every request alike and leave the same figures behind.
 *
 * The scenarios mix two or three accounts with small balances and payment review, several keys
 * each (revoked or not, own rate or the default, with and without the requested scope, usage
 * limits), unknown hashes, times crossing the minute in no particular order, and repeated and
 * earlier-used Idempotency-Keys, so that every refusal of the key and of the admission, the
 * bulk path and its fallback are all taken often.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import * as RolledBackScenario from "./RolledBackScenario.ts"
import { postgres } from "./TestDatabase.ts"

const T0 = Date.parse("2030-01-01T00:00:00.000Z")
const UNKNOWN_HASH = "hash_unknown"

interface Key {
  readonly id: string
  readonly hash: string
  readonly revoked: boolean
  readonly rateLimit: number | null
  readonly scopes: ReadonlyArray<string>
  readonly usageLimit: number | null
}

interface Account {
  readonly id: string
  readonly balance: number
  readonly review: boolean
  readonly keys: ReadonlyArray<Key>
}

/** A request as PgTaskStore's keyedAdmissionJson sends it. */
interface KeyedRequest {
  readonly ordinal: number
  readonly key_hash: string
  readonly now: string
  readonly scope: string
  readonly default_rate_limit: number
  readonly task_id: string
  readonly model: string
  readonly input: unknown
  readonly price_micros: number
  readonly unit_micros: number
  readonly quantity: number
  readonly settlement: string
  readonly created_at: string
  readonly deadline_at: string
  readonly idempotency_key: string
  readonly fingerprint: string
  readonly idempotency_expires_at: string
  readonly submissions_per_minute: number
  readonly max_unfinished_tasks: number
}

/** A request of a caller the kernel authenticated with one of the keys, as PgTaskStore's admissionJson sends it. */
type CallerRequest = Omit<KeyedRequest, "key_hash" | "now" | "scope" | "default_rate_limit"> & {
  readonly account_id: string
  readonly api_key_id: string
  readonly key_usage_limit: number | null
}

type Request = KeyedRequest | CallerRequest

const isCallers = (request: Request): request is CallerRequest => "account_id" in request

interface Scenario {
  readonly accounts: ReadonlyArray<Account>
  readonly batches: ReadonlyArray<ReadonlyArray<Request>>
}

/** True about once in `n` draws (not an integer tested against its bound: fast-check draws bounds far more often). */
const oneIn = (n: number) =>
  fc.oneof({ arbitrary: fc.constant(true), weight: 1 }, { arbitrary: fc.constant(false), weight: n - 1 })

const keyArbitrary = fc.record({
  revoked: oneIn(6),
  rateLimit: fc.option(fc.integer({ min: 1, max: 4 })),
  scopes: fc.constantFrom(
    ["jobs:create"],
    ["jobs:create", "chat:create"],
    ["jobs:create", "jobs:read"],
    ["jobs:create", "jobs:read", "chat:create"],
    ["jobs:create"],
    ["chat:create"],
    []
  ),
  usageLimit: fc.option(fc.integer({ min: 0, max: 6 }))
})

const accountArbitrary = fc.record({
  balance: fc.integer({ min: 0, max: 12 }),
  review: oneIn(6),
  keys: fc.array(keyArbitrary, { minLength: 1, maxLength: 3 })
})

const requestArbitrary = fc.record({
  unknown: oneIn(8),
  // A caller's request (the key's account, id and usage limit given) instead of the key's.
  caller: oneIn(4),
  // Taken modulo the number of keys.
  key: fc.nat(99),
  scope: oneIn(6).map((chat) => (chat ? "chat:create" : "jobs:create")),
  price: fc.integer({ min: 0, max: 3 }),
  second: fc.integer({ min: 0, max: 130 }),
  idempotencyKey: fc.integer({ min: 0, max: 3 }),
  fingerprint: fc.constantFrom("f1", "f2"),
  perMinute: fc.integer({ min: 1, max: 5 }),
  maxUnfinished: fc.integer({ min: 1, max: 5 })
})

const scenarioArbitrary: fc.Arbitrary<Scenario> = fc
  .record({
    accounts: fc.array(accountArbitrary, { minLength: 2, maxLength: 3 }),
    defaultRateLimit: fc.integer({ min: 1, max: 4 }),
    batches: fc.array(fc.array(requestArbitrary, { minLength: 1, maxLength: 10 }), { minLength: 1, maxLength: 3 })
  })
  .map(({ accounts: drawn, batches, defaultRateLimit }) => {
    const accounts = drawn.map(
      (account, a): Account => ({
        id: `acct_${a}`,
        balance: account.balance,
        review: account.review,
        keys: account.keys.map((key, k) => ({ id: `key_${a}_${k}`, hash: `hash_${a}_${k}`, ...key }))
      })
    )
    const keys = accounts.flatMap((account) => account.keys.map((key) => ({ key, accountId: account.id })))
    let serial = 0
    return {
      accounts,
      batches: batches.map((batch) =>
        batch.map((r, index): Request => {
          const at = new Date(T0 + r.second * 1000).toISOString()
          const { accountId, key } = keys[r.key % keys.length]!
          const who =
            r.caller && !r.unknown
              ? { account_id: accountId, api_key_id: key.id, key_usage_limit: key.usageLimit }
              : {
                  key_hash: r.unknown ? UNKNOWN_HASH : key.hash,
                  now: at,
                  scope: r.scope,
                  default_rate_limit: defaultRateLimit
                }
          return {
            ordinal: index + 1,
            ...who,
            task_id: `task_${String(serial++).padStart(4, "0")}`,
            model: "m",
            input: { prompt: "p" },
            price_micros: r.price,
            unit_micros: r.price,
            quantity: 1,
            settlement: "fixed",
            created_at: at,
            deadline_at: new Date(T0 + r.second * 1000 + 3_600_000).toISOString(),
            idempotency_key: `idem_${r.idempotencyKey}`,
            fingerprint: r.fingerprint,
            idempotency_expires_at: new Date(T0 + r.second * 1000 + 86_400_000).toISOString(),
            submissions_per_minute: r.perMinute,
            max_unfinished_tasks: r.maxUnfinished
          }
        })
      )
    }
  })

/** The answer to a caller's request, or to one whose hash names a key; outcome null when the key was refused. */
interface Answer {
  readonly ordinal: number
  readonly key_id: string | null
  readonly window_started: Date | null
  readonly window_requests: number | null
  readonly outcome: string | null
  readonly detail: string | null
  readonly task_id: string | null
}

/** The key as taskmeter_authenticate_batch answers it, with the request counted. */
interface Counted {
  readonly key_id: string
  readonly account_id: string
  readonly revoked: boolean
  readonly rate_limit_per_minute: number | null
  readonly scopes: ReadonlyArray<string>
  readonly usage_limit: number | null
  readonly window_started: Date
  readonly window_requests: number
}

/** KeyCheck.refusal's rule for a key the store found by the request's hash. */
const passes = (counted: Counted, request: KeyedRequest): boolean =>
  !counted.revoked &&
  counted.window_requests <= (counted.rate_limit_per_minute ?? request.default_rate_limit) &&
  counted.scopes.includes(request.scope)

const setUp = (sql: SqlClient.SqlClient, scenario: Scenario) =>
  Effect.gen(function* () {
    for (const account of scenario.accounts) {
      yield* sql`INSERT INTO accounts (id, name, created_at, balance_micros, payment_review)
        VALUES (${account.id}, ${account.id}, ${new Date(T0)}, ${account.balance}, ${account.review})`
      for (const key of account.keys) {
        yield* sql`INSERT INTO api_keys (
            id, account_id, name, display_prefix, hash, scopes, created_at, revoked_at, rate_limit_per_minute,
            usage_limit
          ) VALUES (
            ${key.id}, ${account.id}, 'k', 'tm_x', ${key.hash}, ${`{${key.scopes.join(",")}}`}::text[],
            ${new Date(T0)}, ${key.revoked ? new Date(T0) : null}::timestamptz, ${key.rateLimit}::integer,
            ${key.usageLimit}::integer
          )`
        yield* sql`INSERT INTO api_key_windows (api_key_id) VALUES (${key.id})`
      }
    }
  })

/** Everything the requests can change, in a comparable form. */
const stateOf = (sql: SqlClient.SqlClient) =>
  Effect.all({
    accounts: sql`SELECT id, reserved_micros::text, unfinished_tasks, submissions_window_start, submissions_in_window
      FROM accounts ORDER BY id`,
    keys: sql`SELECT id, usage_count FROM api_keys ORDER BY id`,
    windows: sql`SELECT api_key_id, window_start, requests_in_window FROM api_key_windows ORDER BY api_key_id`,
    tasks: sql`SELECT id, account_id, api_key_id, status, price_micros::text, created_at FROM tasks ORDER BY id`,
    idempotency: sql`SELECT account_id, idempotency_key, request_fingerprint, task_id, expires_at
      FROM idempotency_keys ORDER BY account_id, idempotency_key`,
    entries: sql`SELECT account_id, kind, amount_micros::text, task_id FROM ledger_entries ORDER BY task_id, kind`
  })

/** The scenario's batches, each answered by `admit`, from a fresh start; rolled back after. */
const run = (
  sql: SqlClient.SqlClient,
  scenario: Scenario,
  admit: (batch: ReadonlyArray<Request>) => Effect.Effect<ReadonlyArray<Answer>, unknown>
) => RolledBackScenario.run(sql, { setUp: setUp(sql, scenario), batches: scenario.batches, admit, stateOf: stateOf(sql) })

const throughKeyedBatch = (sql: SqlClient.SqlClient) => (batch: ReadonlyArray<Request>) =>
  sql<Answer>`SELECT ordinal, (key).id AS key_id, window_started, window_requests, outcome, detail::text,
      (task).id AS task_id
    FROM taskmeter_admit_requests(${JSON.stringify(batch)}::jsonb) ORDER BY ordinal`

/** How often each way through the two steps was taken, to show the scenarios reach them all. */
type Tally = Map<string, number>

const count = (tally: Tally, what: string) => tally.set(what, (tally.get(what) ?? 0) + 1)

const inTwoSteps = (sql: SqlClient.SqlClient, tally: Tally) => (batch: ReadonlyArray<Request>) =>
  Effect.gen(function* () {
    const answered: Array<Answer> = []
    let admissions = 0
    let admitted = 0
    const admit = (admission: CallerRequest) =>
      Effect.map(
        sql<Pick<Answer, "outcome" | "detail" | "task_id">>`SELECT outcome, detail::text, (task).id AS task_id
          FROM taskmeter_admit_requests(${JSON.stringify([admission])}::jsonb)`,
        ([row]) => {
          count(tally, row!.outcome!)
          admissions++
          if (row!.outcome === "Admitted") admitted++
          return row!
        }
      )
    if (batch.some(isCallers) && !batch.every(isCallers)) count(tally, "callers' and keys' requests in one batch")
    for (const r of batch) {
      if (isCallers(r)) {
        answered.push({ ordinal: r.ordinal, key_id: null, window_started: null, window_requests: null, ...(yield* admit(r)) })
        continue
      }
      const [counted] = yield* sql<Counted>`SELECT (key).id AS key_id, (key).account_id,
          (key).revoked_at IS NOT NULL AS revoked, (key).rate_limit_per_minute, (key).scopes, (key).usage_limit,
          window_started, window_requests
        FROM taskmeter_authenticate_batch(ARRAY[${r.key_hash}]::text[], ARRAY[${r.now}]::timestamptz[])`
      if (counted === undefined) {
        count(tally, "key UnknownKey")
        continue
      }
      const asCounted = {
        ordinal: r.ordinal,
        key_id: counted.key_id,
        window_started: counted.window_started,
        window_requests: counted.window_requests
      }
      if (!passes(counted, r)) {
        const refusal = counted.revoked
          ? "Revoked"
          : counted.window_requests > (counted.rate_limit_per_minute ?? r.default_rate_limit)
            ? "RateLimited"
            : "MissingScope"
        count(tally, `key ${refusal}`)
        answered.push({ ...asCounted, outcome: null, detail: null, task_id: null })
        continue
      }
      const { default_rate_limit: _rate, key_hash: _hash, now: _now, scope: _scope, ...fields } = r
      const row = yield* admit({
        ...fields,
        account_id: counted.account_id,
        api_key_id: counted.key_id,
        key_usage_limit: counted.usage_limit
      })
      answered.push({ ...asCounted, ...row })
    }
    if (admissions > 1) count(tally, admitted === admissions ? "batch admitted whole" : "batch with refusals")
    return answered
  })

describe("taskmeter_admit_requests of keys' and callers' requests (PostgreSQL)", () => {
  it.live(
    "answers random batches as counting (a key's request) then admitting each request in turn, and leaves the same figures",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const tally: Tally = new Map()
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(scenarioArbitrary, async (scenario) => {
              const [batched, stepwise] = await Effect.runPromise(
                Effect.all([run(sql, scenario, throughKeyedBatch(sql)), run(sql, scenario, inTwoSteps(sql, tally))])
              )
              expect(batched).toEqual(stepwise)
            }),
            { numRuns: 150 }
          )
        )
        // Every refusal of the key and of the admission was met, and batches of several admissions
        // both admitted whole (the bulk path) and not (the fallback). The counts are random
        // (measured: the rarest, whole batches, 13-20 in 150 scenarios), so each need only be met.
        for (const what of [
          "key UnknownKey",
          "key Revoked",
          "key RateLimited",
          "key MissingScope",
          "Admitted",
          "Replayed",
          "IdempotencyConflict",
          "KeyUsageExceeded",
          "RateLimited",
          "ConcurrencyLimited",
          "PaymentReviewRequired",
          "InsufficientCredits",
          "batch admitted whole",
          "batch with refusals",
          "callers' and keys' requests in one batch"
        ])
          expect(tally.get(what) ?? 0, what).toBeGreaterThan(0)
      }).pipe(Effect.provide(Layer.fresh(postgres({ maxConnections: 2 })))),
    120_000
  )
})
