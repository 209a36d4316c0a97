/**
 * The delivery worker, run by every worker process: claims due deliveries from the shared queue,
 * posts each signed body through `PublicFetch` (the address policy, no redirects: a 3xx is a
 * failed attempt) within a timeout, and records the attempt. A 2xx delivers; anything else is
 * tried again on the `Backoff` schedule, then failed. An endpoint failing for `disableAfterMs`
 * is disabled and the account's contacts (`AccountContacts`) are told through the `Mailer`.
 */
import { Cause, Clock, Effect } from "effect"
import { AccountContacts } from "../accounts/AccountContacts.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import { Mailer } from "../mail/Mailer.ts"
import * as PublicFetch from "../outbound/PublicFetch.ts"
import * as Backoff from "./Backoff.ts"
import * as Signature from "./Signature.ts"
import * as WebhookBody from "./WebhookBody.ts"
import { MAX_EXCERPT, WebhookStore } from "./WebhookStore.ts"
import type { Attempt, AttemptRecord, DeliveryClaim, Endpoint, Outcome } from "./WebhookStore.ts"

export interface Options {
  /** Deliveries in flight at once in this process. Default 64. */
  readonly concurrency?: number | undefined
  /** How long a claim holds a delivery; longer than the timeout. Default 60 s. */
  readonly leaseMs?: number | undefined
  /** The whole request, connection to last byte read. Default 15 s. */
  readonly timeoutMs?: number | undefined
  /** An endpoint failing this long is disabled. */
  readonly disableAfterMs: number
  /** The wait between claims that found nothing. Default 1 s. */
  readonly idleMs?: number | undefined
  /** For the jitter, in [0, 1). */
  readonly random?: (() => number) | undefined
  /** Connections kept per receiving host (`run` keeps one pool for its life). */
  readonly pool?: PublicFetch.Pool | undefined
}

export const DEFAULT_DISABLE_AFTER_MS = 5 * 24 * 60 * 60 * 1000

type Requirements = WebhookStore | Mailer

/** The attempt of a request that got no answer. */
const noAnswer = (at: Date, started: number, error: string): Attempt => ({
  at,
  statusCode: null,
  latencyMs: Date.now() - started,
  responseExcerpt: null,
  error
})

/** Posts one delivery and answers its attempt. */
const post = (claim: DeliveryClaim, secrets: ReadonlyArray<string>, now: Date, options: Options) =>
  Effect.gen(function* () {
    const { delivery } = claim
    const timeoutMs = options.timeoutMs ?? 15_000
    const body = WebhookBody.body(claim)
    const signed = Signature.headers(secrets, delivery.id, Math.floor(now.getTime() / 1000), body)
    const started = Date.now()
    return yield* PublicFetch.post(delivery.url, body, {
      headers: { ...signed, "content-type": "application/json", "user-agent": "taskmeter-webhooks" },
      pool: options.pool,
      maxAnswerBytes: MAX_EXCERPT
    }).pipe(
      Effect.map(
        (answer): Attempt => ({
          at: now,
          statusCode: answer.status,
          latencyMs: Date.now() - started,
          responseExcerpt: answer.text.slice(0, MAX_EXCERPT),
          error: answer.status >= 200 && answer.status < 300 ? null : `HTTP ${answer.status}`
        })
      ),
      Effect.timeoutOrElse({
        duration: timeoutMs,
        orElse: () => Effect.succeed(noAnswer(now, started, `no answer within ${timeoutMs} ms`))
      }),
      Effect.catch((error) => Effect.succeed(noAnswer(now, started, error.message)))
    )
  })

const noticeText = (endpoint: Endpoint, reason: string): string =>
  `Your taskmeter webhook endpoint ${endpoint.url} (${endpoint.id}) was disabled: ${reason}.\n\n` +
  "Deliveries to it stop until it is enabled again (PATCH /api/v1/webhook-endpoints/{id} with enabled: true). " +
  "Its delivery log (GET /api/v1/webhook-endpoints/{id}/deliveries) shows what it answered; any delivery can be sent again."

/** Tells the account's contacts that the endpoint was disabled, or logs that nobody could be told. */
const notify = (endpoint: Endpoint, reason: string) =>
  Effect.gen(function* () {
    const contacts = yield* AccountContacts
    const emails = yield* contacts.emailsOf(endpoint.accountId)
    const mailer = yield* Mailer
    if (emails.length === 0) {
      return yield* Effect.logWarning(
        `Webhook endpoint ${endpoint.id} of ${endpoint.accountId} was disabled (${reason}); the account has no contact address to tell`
      )
    }
    for (const to of emails) {
      yield* mailer
        .send({ to, subject: "A taskmeter webhook endpoint was disabled", text: noticeText(endpoint, reason) })
        .pipe(Effect.catch((error) => Effect.logWarning(`The notice to ${to} was not sent`, error.message)))
    }
  })

const days = (ms: number) => `${Math.round((ms / 86_400_000) * 10) / 10} days`

/** Posts one claimed delivery (none when its endpoint is disabled): what to record of it. */
const attemptOf = (claim: DeliveryClaim, options: Options, now: Date) =>
  Effect.gen(function* () {
    const store = yield* WebhookStore
    const { delivery } = claim
    const held = { deliveryId: delivery.id, leaseToken: claim.leaseToken }
    if (!claim.endpointEnabled) return { ...held, outcome: { _tag: "Failed" } } satisfies AttemptRecord
    const secrets =
      claim.secrets.length > 0 ? claim.secrets : [yield* store.accountSecret(delivery.accountId, Signature.newSecret(), now)]
    const attempt = yield* post(claim, secrets, now, options)
    const retryAt = Backoff.nextAttemptAt(claim.attemptNumber, now, (options.random ?? Math.random)())
    const outcome: Outcome =
      attempt.error === null ? { _tag: "Delivered" } : retryAt === undefined ? { _tag: "Failed" } : { _tag: "Retry", at: retryAt }
    return { ...held, attempt, outcome } satisfies AttemptRecord
  })

/** Disables the endpoint failing since `since` for `disableAfterMs` or longer, and tells the account. */
const disableIfFailing = (endpointId: string, since: Date, options: Options, now: Date) =>
  Effect.gen(function* () {
    if (now.getTime() - since.getTime() < options.disableAfterMs) return
    const reason = `every delivery failed for ${days(now.getTime() - since.getTime())} (since ${since.toISOString()})`
    const store = yield* WebhookStore
    const disabled = yield* store.disableFailing(endpointId, new Date(now.getTime() - options.disableAfterMs), reason, now)
    if (disabled !== undefined) yield* notify(disabled, reason)
  })

/**
 * One round: claims what is due (up to the concurrency), posts it all, records the round's
 * outcomes in one write, then disables the endpoints failing too long; how many it claimed.
 */
export const deliverDue = (options: Options): Effect.Effect<number, StoreUnavailable, Requirements> =>
  Effect.gen(function* () {
    const store = yield* WebhookStore
    const now = new Date(yield* Clock.currentTimeMillis)
    const claims = yield* store.claim({ limit: options.concurrency ?? 64, leaseMs: options.leaseMs ?? 60_000, now })
    if (claims.length === 0) return 0
    const records = yield* Effect.forEach(claims, (claim) => attemptOf(claim, options, now), { concurrency: "unbounded" })
    const recorded = yield* store.recordRound(records, now)
    const failing = new Map<string, Date>()
    recorded.forEach((each, i) => {
      const endpointId = claims[i]!.delivery.endpointId
      if (endpointId !== null && each.endpointFailingSince !== null) failing.set(endpointId, each.endpointFailingSince)
    })
    for (const [endpointId, since] of failing) yield* disableIfFailing(endpointId, since, options, now)
    return claims.length
  })

/** Delivers until interrupted: claims again at once after a busy round, after `idleMs` after an empty one. */
export const run = (options: Options): Effect.Effect<never, never, Requirements> =>
  Effect.scoped(
    Effect.flatMap(PublicFetch.makePool(), (pool) =>
      deliverDue({ ...options, pool }).pipe(
        Effect.catchCause((cause) =>
          Effect.as(Effect.logWarning("Webhook deliveries failed this round", Cause.pretty(cause)), 0)
        ),
        Effect.flatMap((claimed) => (claimed > 0 ? Effect.void : Effect.sleep(options.idleMs ?? 1000))),
        Effect.forever
      )
    )
  )
