/**
 * The admin procedures over the kernel services. Thin: each handler checks the ids it was
 * given, calls one or two kernel operations and turns records into the wire shapes of
 * AdminRpc. Price changes go through the Pricer, which keeps them where it keeps the list (the
 * servers' Pricer: the database, where every process sharing it picks them up).
 */
import { Effect, Schema } from "effect"
import {
  Accounts,
  AccountStore,
  type BlobStore,
  ChatStore,
  Ids,
  Ledger,
  type LedgerStore,
  type MediaStore,
  type Money,
  Payments,
  PaymentStore,
  Pricer,
  ChatPrices,
  type PriceList,
  Retention,
  type StoreError,
  TaskStore,
  Users
} from "@taskmeter/kernel"
import { OAuthStore, SignInCodes } from "@taskmeter/mcp"
import { AdminError, AdminRpcs, MAX_TASK_PAGE, REVENUE_MAX_DAYS } from "./AdminRpc.ts"
import type * as AdminRpc from "./AdminRpc.ts"
import * as AttachedResults from "./AttachedResults.ts"

const iso = (date: Date): string => date.toISOString()

const account = (a: AccountStore.Account): AdminRpc.Account => ({ id: a.id, name: a.name, createdAt: iso(a.createdAt) })

const apiKey = (k: AccountStore.ApiKeyRecord): AdminRpc.ApiKey => ({
  id: k.id,
  accountId: k.accountId,
  name: k.name,
  displayPrefix: k.displayPrefix,
  scopes: k.scopes,
  createdAt: iso(k.createdAt),
  revokedAt: k.revokedAt === null ? null : iso(k.revokedAt),
  rateLimitPerMinute: k.rateLimitPerMinute,
  usageLimit: k.usageLimit,
  usageCount: k.usageCount
})

const createdKey = (k: Accounts.CreatedKey): AdminRpc.CreatedKey => ({ key: apiKey(k.record), secret: k.secret })

const movement = (m: LedgerStore.Movement): AdminRpc.Movement => ({
  entry: { ...m.entry, createdAt: iso(m.entry.createdAt) },
  balances: m.balances
})

const task = (t: TaskStore.TaskRecord): AdminRpc.Task => ({
  id: t.id,
  accountId: t.accountId,
  model: t.model,
  status: t.status,
  errorCode: t.errorCode,
  priceMicros: t.priceMicros,
  chargedMicros: t.chargedMicros,
  createdAt: iso(t.createdAt),
  updatedAt: iso(t.updatedAt)
})

const heldTaskOf = (held: TaskStore.HeldTask, now: number): AdminRpc.HeldTask => ({
  ...task(held.task),
  ageSeconds: Math.max(0, Math.floor((now - held.task.createdAt.getTime()) / 1000)),
  upstreamRef: held.task.upstreamRef,
  upstreamAnswer: held.upstreamAnswer
})

/** The note of a resolution's ledger entries. */
const operatorNote = (reason: string) => `resolved by operator: ${reason}`

const mcpSignIn = (active: OAuthStore.ActiveGrant): AdminRpc.McpSignIn => ({
  id: active.grant.id,
  accountId: active.grant.accountId,
  clientId: active.grant.clientId,
  clientName: active.clientName,
  apiKeyId: active.grant.apiKeyId,
  scopes: active.grant.scopes,
  createdAt: iso(active.grant.createdAt),
  lastRefreshedAt: iso(active.lastIssuedAt),
  expiresAt: iso(active.refreshExpiresAt)
})

const payment = (p: PaymentStore.Payment): AdminRpc.Payment => ({ ...p, createdAt: iso(p.createdAt) })

const paymentEvent = (kept: PaymentStore.KeptEvent): AdminRpc.PaymentEvent => {
  const { _tag, eventId, paymentId, processor, ...detail } = kept.event
  return {
    processor,
    eventId,
    kind: _tag,
    paymentId,
    detail,
    receivedAt: iso(kept.receivedAt),
    appliedAt: kept.appliedAt === null ? null : iso(kept.appliedAt),
    problem: kept.problem
  }
}

const DAY_MS = 24 * 60 * 60 * 1000

/** Midnight UTC of a YYYY-MM-DD day; undefined when it is not one (2026-02-30 neither). */
const utcDay = (day: string): Date | undefined => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return undefined
  const at = new Date(`${day}T00:00:00.000Z`)
  return Number.isNaN(at.getTime()) || at.toISOString().slice(0, 10) !== day ? undefined : at
}

/** The sums of a revenue report's lines and refunds. */
const revenueTotals = (report: ChatStore.Revenue): { readonly totals: AdminRpc.Revenue["totals"] } => {
  const sum = (pick: (row: ChatStore.RevenueRow) => number) => report.rows.reduce((total, row) => total + pick(row), 0)
  return {
    totals: {
      tasksCharged: sum((row) => row.tasksCharged),
      taskChargedMicros: sum((row) => row.taskChargedMicros),
      tasksReleased: sum((row) => row.tasksReleased),
      taskReleasedMicros: sum((row) => row.taskReleasedMicros),
      chatRequests: sum((row) => row.chatRequests),
      chatChargedMicros: sum((row) => row.chatChargedMicros),
      chatUpstreamCostMicros: sum((row) => row.chatUpstreamCostMicros),
      chatShortfallMicros: sum((row) => row.chatShortfallMicros),
      refunds: report.refunds.reduce((total, day) => total + day.refunds, 0),
      refundedMicros: report.refunds.reduce((total, day) => total + day.refundedMicros, 0)
    }
  }
}

const fail = (reason: AdminRpc.AdminErrorReason, message: string) => Effect.fail(new AdminError({ reason, message }))

const storeUnavailable = (error: StoreError.StoreUnavailable) =>
  new AdminError({ reason: "StoreUnavailable", message: error.message })

const accountNotFound = (accountId: string) => new AdminError({ reason: "AccountNotFound", message: `No account ${accountId}.` })

/** Maps the kernel's failures of account-scoped operations onto AdminError. */
const onAccount = (accountId: string) =>
  Effect.mapError((error: Accounts.AccountNotFound | StoreError.StoreUnavailable) =>
    error._tag === "AccountNotFound" ? accountNotFound(accountId) : storeUnavailable(error)
  )

const accountIdOf = (text: string): Effect.Effect<Ids.AccountId, AdminError> =>
  Schema.is(Ids.AccountId)(text) ? Effect.succeed(text) : Effect.fail(accountNotFound(text))

/** An invalid list is the operator's to fix; a store that failed or kept changing is worth a retry. */
const priceChangeError = (error: Pricer.ChangeError) =>
  new AdminError({ reason: error._tag === "PriceListInvalid" ? "PriceListInvalid" : "StoreUnavailable", message: error.message })

/** The entry PriceSet makes of the model's current one (see AdminRpc's PriceSet). */
const priceSetEntry = (
  current: PriceList.ModelPrice | undefined,
  entry: PriceList.ModelPrice | undefined,
  dailyBudgetMicros: Money.Micros | null | undefined
): PriceList.ModelPrice => {
  const { dailyBudgetMicros: named, ...rest } = entry ?? current ?? { enabled: false }
  const budget = dailyBudgetMicros === undefined ? (named ?? current?.dailyBudgetMicros) : dailyBudgetMicros
  return budget === null || budget === undefined ? rest : { ...rest, dailyBudgetMicros: budget }
}

export const layer = AdminRpcs.toLayer(
  Effect.gen(function* () {
    const accounts = yield* Accounts.Accounts
    const accountStore = yield* AccountStore.AccountStore
    const ledger = yield* Ledger.Ledger
    const pricer = yield* Pricer.Pricer
    const chatPrices = yield* ChatPrices.ChatPrices
    const chatStore = yield* ChatStore.ChatStore
    const tasks = yield* TaskStore.TaskStore
    const oauth = yield* OAuthStore.OAuthStore
    const users = yield* Users.Users
    const paymentStore = yield* PaymentStore.PaymentStore
    const payments = yield* Effect.serviceOption(Payments.Payments)
    const resultStores = yield* Effect.context<BlobStore.BlobStore | MediaStore.MediaStore>()

    /** The task, read first so that the operator learns why it cannot be resolved. */
    const heldTask = (accountId: string, taskId: Ids.TaskId) =>
      Effect.gen(function* () {
        const id = yield* accountIdOf(accountId)
        const found = yield* tasks.get(id, taskId).pipe(Effect.mapError(storeUnavailable))
        if (found === undefined) return yield* fail("TaskNotFound", `Account ${accountId} has no task ${taskId}.`)
        if (found.status !== "reconciliation_required") {
          return yield* fail("TaskNotResolvable", `Task ${taskId} is ${found.status}, not reconciliation_required.`)
        }
        return found
      })

    const balancesOf = (accountId: Ids.AccountId) => ledger.balances(accountId).pipe(onAccount(accountId))

    const priceChange = (change: Effect.Effect<void, Pricer.ChangeError>) =>
      change.pipe(Effect.mapError(priceChangeError), Effect.andThen(pricer.current))

    /** One chat model's entry changed; a model the list does not name is InvalidRequest when nothing was made of it. */
    const chatPriceChange = (
      model: string,
      next: (current: ChatPrices.ChatModelPrice | undefined) => ChatPrices.ChatModelPrice | undefined
    ) =>
      chatPrices.updateModel(model, next).pipe(
        Effect.mapError((error) =>
          error._tag === "PriceListConflict" || error._tag === "StoreUnavailable"
            ? new AdminError({ reason: "StoreUnavailable", message: error.message })
            : new AdminError({ reason: "PriceListInvalid", message: error.message })
        ),
        Effect.flatMap((entry) =>
          entry === undefined ? fail("InvalidRequest", `The chat price list has no model ${model}.`) : Effect.succeed(entry)
        )
      )

    const creditChange = (
      apply: typeof ledger.grant,
      {
        accountId,
        amountMicros,
        externalRef,
        note
      }: {
        readonly accountId: string
        readonly amountMicros: Money.Micros
        readonly note?: string
        readonly externalRef?: string
      }
    ) =>
      Effect.gen(function* () {
        const id = yield* accountIdOf(accountId)
        const moved = yield* apply(id, amountMicros, { note, externalRef }).pipe(onAccount(id))
        return movement(moved)
      })

    return AdminRpcs.of({
      AccountCreate: ({ creditsMicros, name }) =>
        Effect.gen(function* () {
          const created = yield* accounts.create({ name, credits: creditsMicros }).pipe(Effect.mapError(storeUnavailable))
          return {
            account: account(created.account),
            balances: yield* balancesOf(created.account.id),
            key: createdKey(created.key)
          }
        }),
      AccountList: () =>
        Effect.gen(function* () {
          const all = yield* accounts.list.pipe(Effect.mapError(storeUnavailable))
          return yield* Effect.forEach(all, (a) => Effect.map(balancesOf(a.id), (balances) => ({ ...account(a), balances })))
        }),
      AccountShow: ({ accountId }) =>
        Effect.gen(function* () {
          const id = yield* accountIdOf(accountId)
          const found = yield* accounts.get(id).pipe(onAccount(id))
          const keys = yield* accounts.listKeys(id).pipe(Effect.mapError(storeUnavailable))
          return { account: account(found), balances: yield* balancesOf(id), keys: keys.map(apiKey) }
        }),
      AccountRetention: ({ accountId, days }) =>
        Effect.gen(function* () {
          const id = yield* accountIdOf(accountId)
          const set = yield* accountStore.setResultRetention(id, days).pipe(Effect.mapError(storeUnavailable))
          if (!set) return yield* Effect.fail(accountNotFound(accountId))
          const { days: defaultDays } = yield* Retention.ResultRetention
          return { accountId: id, resultRetentionDays: days, defaultDays }
        }),
      KeyCreate: ({ accountId, name, rateLimitPerMinute, scopes, usageLimit }) =>
        Effect.gen(function* () {
          const id = yield* accountIdOf(accountId)
          const created = yield* accounts.createKey(id, { name, scopes, rateLimitPerMinute, usageLimit }).pipe(onAccount(id))
          return createdKey(created)
        }),
      KeyRevoke: ({ accountId, keyId }) =>
        Effect.gen(function* () {
          const id = yield* accountIdOf(accountId)
          const revoked =
            Schema.is(Ids.ApiKeyId)(keyId) && (yield* accounts.revokeKey(id, keyId).pipe(Effect.mapError(storeUnavailable)))
          if (!revoked) return yield* fail("KeyNotFound", `Account ${accountId} has no key ${keyId}.`)
        }),
      CreditsGrant: (change) => creditChange(ledger.grant, change),
      Refund: (change) => creditChange(ledger.refund, change),
      PriceList: () => pricer.current,
      PriceSet: ({ dailyBudgetMicros, entry, model }) =>
        entry === undefined && dailyBudgetMicros === undefined
          ? fail("InvalidRequest", "Give the model's entry, its dailyBudgetMicros, or both.")
          : priceChange(pricer.updateModel(model, (current) => priceSetEntry(current, entry, dailyBudgetMicros))).pipe(
              Effect.flatMap((list) => Effect.orDie(Effect.fromNullishOr(list.models[model])))
            ),
      PriceDisable: ({ model }) => Effect.asVoid(priceChange(pricer.disable(model))),
      ChatPriceList: () => chatPrices.current,
      ChatPriceSet: ({ model, ...given }) =>
        chatPriceChange(model, (current) => ({ ...current, ...given, enabled: true }) as ChatPrices.ChatModelPrice),
      ChatPriceDisable: ({ model }) =>
        Effect.asVoid(chatPriceChange(model, (current) => (current === undefined ? undefined : { ...current, enabled: false }))),
      ChatMargin: (payload) =>
        Effect.gen(function* () {
          const to = payload.to === undefined ? new Date() : new Date(payload.to)
          const from = payload.from === undefined ? new Date(to.getTime() - DAY_MS) : new Date(payload.from)
          if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime()) || from >= to) {
            return yield* fail("InvalidRequest", "from and to must be ISO 8601 date-times, from before to.")
          }
          const rows = yield* chatStore.margin({ from, to }).pipe(Effect.mapError(storeUnavailable))
          return {
            from: from.toISOString(),
            to: to.toISOString(),
            rows: rows.map((row) => ({ ...row, marginMicros: row.chargedMicros - row.upstreamCostMicros }))
          }
        }),
      Revenue: ({ from, to }) =>
        Effect.gen(function* () {
          const start = utcDay(from)
          const end = utcDay(to)
          if (start === undefined || end === undefined || start > end) {
            return yield* fail("InvalidRequest", "from and to must be UTC days (YYYY-MM-DD), from not after to.")
          }
          if ((end.getTime() - start.getTime()) / DAY_MS + 1 > REVENUE_MAX_DAYS) {
            return yield* fail("InvalidRequest", `A report covers at most ${REVENUE_MAX_DAYS} days: narrow from and to.`)
          }
          const report = yield* chatStore
            .revenue({ from: start, to: new Date(end.getTime() + DAY_MS) })
            .pipe(Effect.mapError(storeUnavailable))
          return { from, to, ...report, ...revenueTotals(report), truncated: report.rows.length >= ChatStore.REVENUE_ROWS }
        }),
      TaskList: ({ after, limit }) =>
        Effect.gen(function* () {
          const size = limit ?? MAX_TASK_PAGE
          // An `after` that is no task id pages from the start of what sorts after it, as ids do.
          const page = yield* tasks.listHeld(size, after as Ids.TaskId | undefined).pipe(Effect.mapError(storeUnavailable))
          const now = Date.now()
          return {
            tasks: page.map((held) => heldTaskOf(held, now)),
            next: page.length < size ? null : page[page.length - 1]!.task.id
          }
        }),
      TaskResolve: ({ accountId, chargeMicros, outcome, reason, results, taskId }) =>
        Effect.gen(function* () {
          if (!Ids.isTaskId(taskId)) return yield* fail("TaskNotFound", `No task ${taskId}.`)
          if (outcome === "succeeded" && accountId === undefined) {
            return yield* fail("InvalidRequest", "Resolving a task as succeeded needs its account, to read its quote.")
          }
          if (outcome === "succeeded" && (results === undefined || results.length === 0)) {
            return yield* fail(
              "InvalidRequest",
              "Resolving a task as succeeded needs its results: a link to fetch or a file to upload, at least one."
            )
          }
          if (outcome === "failed" && results !== undefined && results.length > 0) {
            return yield* fail("InvalidRequest", "A task resolved as failed has no results; leave them out.")
          }
          const held = accountId === undefined ? undefined : yield* heldTask(accountId, taskId)
          const charge = outcome === "failed" ? undefined : (chargeMicros ?? held?.priceMicros)
          if (held !== undefined && charge !== undefined && charge > held.priceMicros) {
            return yield* fail(
              "InvalidRequest",
              `A charge of ${charge} micros exceeds the ${held.priceMicros} micros reserved for task ${taskId}.`
            )
          }
          // Stored before the status changes, as the worker does: a resolution that loses a race
          // leaves blobs whose task never names them, which housekeeping removes.
          const assets =
            held === undefined || results === undefined
              ? undefined
              : yield* AttachedResults.store(held, results).pipe(Effect.provide(resultStores))
          const resolved = yield* tasks
            .resolve({
              taskId,
              to: outcome,
              now: new Date(),
              chargeMicros: charge,
              assets,
              // Failing keeps the code that explained why the task was held.
              errorCode: outcome === "succeeded" ? null : undefined,
              note: operatorNote(reason)
            })
            .pipe(Effect.mapError(storeUnavailable))
          if (resolved === undefined) {
            return yield* fail("TaskNotResolvable", `Task ${taskId} does not exist or is not in reconciliation_required.`)
          }
          return task(resolved)
        }),
      Audit: () => Effect.mapError(ledger.audit, storeUnavailable),
      SignInCodeCreate: ({ accountId }) =>
        Effect.gen(function* () {
          const id = yield* accountIdOf(accountId)
          const { code, expiresAt } = yield* SignInCodes.create(id).pipe(
            Effect.provideService(OAuthStore.OAuthStore, oauth),
            Effect.provideService(Accounts.Accounts, accounts),
            onAccount(id)
          )
          return { accountId: id, code, expiresAt: iso(expiresAt) }
        }),
      McpSignInList: ({ accountId }) =>
        Effect.gen(function* () {
          const id = yield* accountIdOf(accountId)
          yield* accounts.get(id).pipe(onAccount(id))
          const active = yield* oauth.listActiveGrants(id, new Date()).pipe(Effect.mapError(storeUnavailable))
          return active.map(mcpSignIn)
        }),
      PaymentList: ({ accountId }) =>
        Effect.gen(function* () {
          const id = yield* accountIdOf(accountId)
          yield* accounts.get(id).pipe(onAccount(id))
          return (yield* paymentStore.payments(id).pipe(Effect.mapError(storeUnavailable))).map(payment)
        }),
      PaymentEvents: ({ limit, unapplied }) =>
        paymentStore.events({ unappliedOnly: unapplied, limit: limit ?? 100 }).pipe(
          Effect.map((events) => events.map(paymentEvent)),
          Effect.mapError(storeUnavailable)
        ),
      PaymentReconcile: ({ from, to }) =>
        Effect.gen(function* () {
          if (payments._tag === "None") {
            return yield* fail(
              "PaymentsNotConfigured",
              "No payment processor is configured (STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET)."
            )
          }
          const period = { from: new Date(from), to: new Date(to) }
          if (Number.isNaN(period.from.getTime()) || Number.isNaN(period.to.getTime()) || period.from >= period.to) {
            return yield* fail("InvalidRequest", "Give the period as two ISO 8601 dates, from before to.")
          }
          return yield* payments.value
            .reconcile(period)
            .pipe(
              Effect.mapError((error) =>
                error._tag === "StoreUnavailable"
                  ? storeUnavailable(error)
                  : new AdminError({ reason: "ProcessorUnavailable", message: error.message })
              )
            )
        }),
      McpSignInRevoke: ({ accountId, signInId }) =>
        Effect.gen(function* () {
          const notFound = fail(
            "SignInNotFound",
            `No MCP sign-in ${signInId}${accountId === undefined ? "" : ` of ${accountId}`}.`
          )
          // Sign-in ids are UUIDs: anything else names none (and is not sent to the store).
          if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(signInId)) return yield* notFound
          const grant = yield* oauth.getGrant(signInId).pipe(Effect.mapError(storeUnavailable))
          if (grant === undefined || (accountId !== undefined && grant.accountId !== accountId)) return yield* notFound
          const now = new Date()
          const revoked = yield* oauth.revokeGrant(grant.id, now).pipe(Effect.mapError(storeUnavailable))
          return {
            id: grant.id,
            accountId: grant.accountId,
            revokedAt: iso(revoked ? now : (grant.revokedAt ?? now)),
            alreadyRevoked: !revoked
          }
        }),
      UserInvite: ({ accountId, email, role }) =>
        Effect.gen(function* () {
          const id = accountId === undefined ? undefined : yield* accountIdOf(accountId)
          if (id !== undefined) yield* accounts.get(id).pipe(onAccount(id))
          const invitation = yield* users
            .invite({ email, accountId: id, role })
            .pipe(
              Effect.mapError((error) =>
                error._tag === "InvalidRequest"
                  ? new AdminError({ reason: "InvalidRequest", message: error.message })
                  : storeUnavailable(error)
              )
            )
          return { email: invitation.email, link: invitation.link, expiresAt: iso(invitation.expiresAt) }
        }),
      OperatorSet: ({ email, operator }) =>
        Effect.gen(function* () {
          const found = yield* users.setOperator(email, operator).pipe(Effect.mapError(storeUnavailable))
          if (!found) return yield* fail("UserNotFound", `No console user has the email ${email}.`)
          return { email, operator }
        })
    })
  })
)
