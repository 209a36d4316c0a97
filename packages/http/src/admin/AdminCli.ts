/**
 * `taskmeter admin ...`: the operator's commands, each one call of the admin RPC service, found
 * through `<DATA_DIR>/admin.json` or `--url`/TASKMETER_URL with TASKMETER_ADMIN_TOKEN (preferred to
 * `--token`, which shows in `ps`). Output is for people unless `--json` (the result on stdout,
 * `{ "error": { "reason", "message" } }` on stderr); any failure exits 1. Amounts are USD decimal
 * strings (`--usd 12.5`), read exactly.
 */
import { Config, Console, Data, Effect, Option, Redacted, Runtime } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import type { RpcClientError } from "effect/rpc/RpcClientError"
import { ChatPrices, Money, PriceList, Scope } from "@taskmeter/kernel"
import * as AdminClient from "./AdminClient.ts"
import * as AdminFile from "./AdminFile.ts"
import type * as AdminRpc from "./AdminRpc.ts"
import * as ResultFlags from "./ResultFlags.ts"
import * as RevenueTable from "./RevenueTable.ts"

/** A failure already shown to the operator: the runtime only sets the exit code. */
class Reported extends Data.TaggedError("Reported")<{}> {
  override readonly [Runtime.errorReported] = false
}

/** Prints `error: <message>` on stderr and fails so that the process exits 1, with no stack trace. */
export const failWith = (message: string): Effect.Effect<never, Reported> =>
  Effect.andThen(Console.error(`error: ${message}`), Effect.fail(new Reported()))

const usdFlag = (name: string) =>
  Flag.String(name).pipe(
    Flag.withMetavar("USD"),
    Flag.withDescription("An amount in USD, such as 25 or 0.50."),
    Flag.filterMap(
      (text) => Option.fromNullishOr(Money.parseUsd(text)),
      (text) =>
        `--${name}: "${text}" is not an amount in USD with at most six decimals, such as 25 or 0.50, ` +
        `of at most ${Money.MAX_USD}`
    )
  )

const positiveUsdFlag = (name: string) =>
  usdFlag(name).pipe(
    Flag.filterMap(
      (amount) => (amount > 0 ? Option.some(amount) : Option.none()),
      () => `--${name} must be more than 0`
    )
  )

const admin = Command.make("admin").pipe(
  Command.withDescription("Operator commands, sent to the running server's admin service."),
  Command.withSharedFlags({
    url: Flag.String("url").pipe(
      Flag.withFallbackConfig(Config.String("TASKMETER_URL")),
      Flag.optional,
      Flag.withDescription("The server's admin address, ADMIN_HOST:ADMIN_PORT (default: from <data-dir>/admin.json).")
    ),
    token: Flag.Redacted("token").pipe(
      Flag.optional,
      Flag.withDescription(
        "The operator token (default: TASKMETER_ADMIN_TOKEN, else <data-dir>/admin.json). Prefer the variable: a flag shows in `ps`."
      )
    ),
    dataDir: Flag.String("data-dir").pipe(
      Flag.withFallbackConfig(Config.String("DATA_DIR")),
      Flag.withDefault("./data"),
      Flag.withDescription("The server's data directory, where admin.json is.")
    ),
    json: Flag.Boolean("json").pipe(Flag.withDefault(false), Flag.withDescription("Print JSON for scripts."))
  })
)

interface Failure {
  readonly reason: string
  readonly message: string
}

const failureOf = (error: AdminRpc.AdminError | RpcClientError | AdminFile.AdminFileError, url: string): Failure => {
  switch (error._tag) {
    case "AdminError":
      return { reason: error.reason, message: error.message }
    case "AdminFileError":
      return { reason: "AdminFileUnreadable", message: `${error.path} ${error.message}` }
    case "RpcClientError": {
      const status = AdminClient.statusOf(error)
      if (status === 401) {
        return { reason: "AuthRequired", message: `The server at ${url} refused the operator token.` }
      }
      if (status !== undefined) {
        return {
          reason: "NotAdminService",
          message:
            `${url} answered ${status}: it does not serve the taskmeter admin service ` +
            "(which has a listener of its own, ADMIN_HOST:ADMIN_PORT, 127.0.0.1:8788 by default; see admin.json's adminUrl)."
        }
      }
      return error.reason._tag === "HttpError" && error.reason.kind === "TransportError"
        ? { reason: "Unreachable", message: `Cannot reach the server at ${url}: is it running (npm start)?` }
        : { reason: "ProtocolError", message: `The exchange with ${url} failed: ${error.message}` }
    }
  }
}

const sameOrigin = (a: string, b: string | undefined): boolean =>
  b !== undefined && URL.canParse(a) && URL.canParse(b) && new URL(a).origin === new URL(b).origin

/**
 * Runs one admin call: finds the server, calls it, prints the result as JSON or as `human`
 * says, and reports a failure the same way.
 */
const call = <A>(
  run: (client: AdminClient.AdminClient["Service"]) => Effect.Effect<A, AdminRpc.AdminError | RpcClientError>,
  /** `apiUrl`: the public API's address, when the admin file names it. */
  human: (result: A, apiUrl: string | undefined) => string
) =>
  Effect.gen(function* () {
    const flags = yield* admin
    const report = (failure: Failure) =>
      Effect.andThen(
        flags.json ? Console.error(JSON.stringify({ error: failure })) : Console.error(`error: ${failure.message}`),
        Effect.fail(new Reported())
      )
    const envToken = yield* Config.option(Config.Redacted("TASKMETER_ADMIN_TOKEN")).pipe(
      Effect.catch(() => Effect.succeed(Option.none()))
    )
    if (Option.isSome(envToken) && Option.isSome(flags.token)) {
      yield* Console.error("warning: --token is ignored: TASKMETER_ADMIN_TOKEN is set, and is used instead.")
    }
    const configured = {
      url: Option.getOrUndefined(flags.url),
      token: Option.getOrUndefined(Option.orElse(envToken, () => flags.token))
    }
    const file =
      configured.url !== undefined && configured.token !== undefined
        ? undefined
        : yield* AdminFile.read(flags.dataDir).pipe(Effect.catch((error) => report(failureOf(error, ""))))
    // Files of releases that served the admin service on the public port name only that one.
    const fileUrl = file === undefined ? undefined : (file.adminUrl ?? file.url)
    const url = configured.url ?? fileUrl
    const fromFile = file !== undefined && fileUrl !== undefined && sameOrigin(fileUrl, url)
    // The file's token is only ever sent to the file's server, never to an address given here.
    const token = configured.token ?? (fromFile ? Redacted.make(file.token) : undefined)
    if (url === undefined) {
      return yield* report({
        reason: "NoServer",
        message:
          `No server found: ${AdminFile.pathOf(flags.dataDir)} does not exist. Start one with \`npm start\` ` +
          "(or give --data-dir), or set TASKMETER_URL (the admin address) and TASKMETER_ADMIN_TOKEN."
      })
    }
    if (token === undefined) {
      return yield* report({
        reason: "NoToken",
        message: `No operator token for ${url}: set TASKMETER_ADMIN_TOKEN (or pass --token).`
      })
    }
    const result = yield* AdminClient.AdminClient.use(run).pipe(
      Effect.provide(AdminClient.layer({ url, token })),
      Effect.catch((error) => report(failureOf(error, url)))
    )
    // A procedure without a result prints `null` in JSON, so stdout always parses.
    yield* Console.log(flags.json ? JSON.stringify(result ?? null, null, 2) : human(result, fromFile ? file.url : undefined))
  })

const usd = (micros: number): string => `${Money.formatUsd(micros)} USD`

const balancesLine = (b: AdminRpc.Balances): string =>
  `balance ${usd(b.balanceMicros)}, reserved ${usd(b.reservedMicros)}, available ${usd(b.availableMicros)}` +
  (b.paymentReview ? " — in payment review: submissions refused until a grant covers the refund" : "")

const keyLines = (created: AdminRpc.CreatedKey): string =>
  [
    `API key (shown once, keep it now): ${created.secret}`,
    `  key id ${created.key.id}, scopes ${created.key.scopes.join(" ")}`
  ].join("\n")

const keyLine = (k: AdminRpc.ApiKey): string =>
  `${k.id}  ${k.displayPrefix}…  ${k.name || "-"}  ${k.scopes.join(" ")}  used ${k.usageCount}` +
  (k.usageLimit === null ? "" : `/${k.usageLimit}`) +
  (k.revokedAt === null ? "" : `  revoked ${k.revokedAt}`)

const accountFlag = Flag.String("account").pipe(Flag.withDescription("The account id (acct_...)."))
const noteFlags = {
  note: Flag.String("note").pipe(Flag.optional, Flag.withDescription("Shown in the account's ledger.")),
  ref: Flag.String("ref").pipe(
    Flag.optional,
    Flag.withDescription("An outside reference (a payment id): repeating a change with it changes nothing.")
  )
}

const accountCreate = Command.make(
  "create",
  {
    name: Flag.String("name").pipe(Flag.withDefault(""), Flag.withDescription("A name for the operator's records.")),
    credits: usdFlag("credits-usd").pipe(Flag.optional, Flag.withDescription("An opening credit grant, in USD."))
  },
  ({ credits, name }) =>
    call(
      (admin) =>
        admin.AccountCreate({
          name,
          ...Option.match(credits, { onNone: () => ({}), onSome: (c) => (c > 0 ? { creditsMicros: c } : {}) })
        }),
      ({ account, balances, key }, apiUrl) =>
        [
          `Account ${account.id}${account.name ? ` (${account.name})` : ""} created; ${balancesLine(balances)}.`,
          keyLines(key),
          "",
          `Try it: curl -H "Authorization: Bearer ${key.secret}" ${
            apiUrl === undefined ? "<PUBLIC_URL>/api/v1/usage" : new URL("/api/v1/usage", apiUrl).href
          }`
        ].join("\n")
    )
).pipe(Command.withDescription("Create an account and its first API key (all scopes)."))

const accountList = Command.make("list", {}, () =>
  call(
    (admin) => admin.AccountList(),
    (accounts) =>
      accounts.length === 0
        ? "No accounts yet: create one with `taskmeter admin account create --credits-usd 25`."
        : accounts.map((a) => `${a.id}  ${a.name || "-"}  ${balancesLine(a.balances)}`).join("\n")
  )
).pipe(Command.withDescription("List accounts with their balances."))

const accountShow = Command.make("show", { account: accountFlag }, ({ account }) =>
  call(
    (admin) => admin.AccountShow({ accountId: account }),
    (d) =>
      [
        `${d.account.id}  ${d.account.name || "-"}  created ${d.account.createdAt}`,
        balancesLine(d.balances),
        d.keys.length === 0 ? "No keys." : `Keys:\n${d.keys.map((k) => `  ${keyLine(k)}`).join("\n")}`
      ].join("\n")
  )
).pipe(Command.withDescription("Show an account, its balances and its keys."))

const accountRetention = Command.make(
  "retention",
  {
    account: accountFlag,
    days: Flag.String("days").pipe(
      Flag.filterMap(
        (text) =>
          text === "default"
            ? Option.some(null)
            : /^[1-9][0-9]{0,4}$/.test(text) && Number(text) <= 36_500
              ? Option.some(Number(text))
              : Option.none(),
        (text) => `--days: "${text}" is neither a whole number of days from 1 to 36500 nor "default"`
      ),
      Flag.withDescription('Days its result files are kept (1 to 36500), or "default" for RESULT_RETENTION.')
    )
  },
  ({ account, days }) =>
    call(
      (admin) => admin.AccountRetention({ accountId: account, days }),
      (r) =>
        r.resultRetentionDays === null
          ? `Account ${r.accountId} keeps result files for the default, ${r.defaultDays} days (RESULT_RETENTION), from now on.`
          : `Account ${r.accountId} keeps result files for ${r.resultRetentionDays} days from now on (the default is ${r.defaultDays}).`
    )
).pipe(
  Command.withDescription(
    "Set how long an account's result files are kept; results stored before keep the expiry they were stored with."
  )
)

const keyCreate = Command.make(
  "create",
  {
    account: accountFlag,
    name: Flag.String("name").pipe(Flag.optional),
    scopes: Flag.String("scopes").pipe(
      Flag.filterMap(
        (text) => Option.fromNullishOr(Scope.parse(text)).pipe(Option.filter((s) => s.length > 0)),
        (text) => `--scopes: "${text}" is not a list of ${Scope.all.join(", ")}`
      ),
      Flag.optional,
      Flag.withDescription(`Space- or comma-separated, of ${Scope.all.join(" ")} (default: all).`)
    ),
    rateLimit: Flag.Int("rate-limit").pipe(Flag.optional, Flag.withDescription("Requests per minute (default: the server's).")),
    usageLimit: Flag.Int("usage-limit").pipe(
      Flag.optional,
      Flag.withDescription("Billable submissions ever (default: unlimited).")
    )
  },
  ({ account, name, rateLimit, scopes, usageLimit }) =>
    call(
      (admin) =>
        admin.KeyCreate({
          accountId: account,
          ...Option.match(name, { onNone: () => ({}), onSome: (name) => ({ name }) }),
          ...Option.match(scopes, { onNone: () => ({}), onSome: (scopes) => ({ scopes }) }),
          ...Option.match(rateLimit, { onNone: () => ({}), onSome: (rateLimitPerMinute) => ({ rateLimitPerMinute }) }),
          ...Option.match(usageLimit, { onNone: () => ({}), onSome: (usageLimit) => ({ usageLimit }) })
        }),
      keyLines
    )
).pipe(Command.withDescription("Create an API key for an account."))

const keyRevoke = Command.make(
  "revoke",
  {
    account: accountFlag,
    key: Flag.String("key").pipe(Flag.withDescription("The key id (key_...)."))
  },
  ({ account, key }) =>
    call(
      (admin) => admin.KeyRevoke({ accountId: account, keyId: key }),
      () => `Key ${key} of ${account} revoked: it is refused from now on (PERMISSION_DENIED).`
    )
).pipe(Command.withDescription("Revoke an API key."))

const creditChange =
  (kind: "CreditsGrant" | "Refund", done: string) =>
  ({
    account,
    note,
    ref,
    usd: amount
  }: {
    readonly account: string
    readonly usd: Money.Micros
    readonly note: Option.Option<string>
    readonly ref: Option.Option<string>
  }) =>
    call(
      (admin) =>
        admin[kind]({
          accountId: account,
          amountMicros: amount,
          ...Option.match(note, { onNone: () => ({}), onSome: (note) => ({ note }) }),
          ...Option.match(ref, { onNone: () => ({}), onSome: (externalRef) => ({ externalRef }) })
        }),
      (moved) => `${done} ${usd(moved.entry.amountMicros)} for ${account} (${moved.entry.id}); ${balancesLine(moved.balances)}.`
    )

const creditsGrant = Command.make(
  "grant",
  { account: accountFlag, usd: positiveUsdFlag("usd"), ...noteFlags },
  creditChange("CreditsGrant", "Granted")
).pipe(Command.withDescription("Add prepaid credits to an account."))

const refund = Command.make(
  "refund",
  { account: accountFlag, usd: positiveUsdFlag("usd"), ...noteFlags },
  creditChange("Refund", "Refunded")
).pipe(
  Command.withDescription(
    "Record a payment refund: it takes the amount off the balance, and may put the account in payment review."
  )
)

const priceEntryLine = (model: string, entry: PriceList.ModelPrice): string => {
  const state = entry.enabled ? "enabled" : "disabled"
  const price =
    entry.rateCard !== undefined
      ? `rate card: ${JSON.stringify(entry.rateCard)}`
      : entry.priceMicros === undefined
        ? "no price"
        : usd(entry.priceMicros)
  const budget = entry.dailyBudgetMicros === undefined ? "" : `  daily budget ${usd(entry.dailyBudgetMicros)}`
  return `${model}  ${state}  ${price}${budget}`
}

/** `--daily-budget-usd`: an amount in USD above 0, or `none` (null) to remove the budget. */
const dailyBudgetFlag = Flag.String("daily-budget-usd").pipe(
  Flag.withMetavar("USD|none"),
  Flag.filterMap(
    (text): Option.Option<Money.Micros | null> => {
      if (text.trim() === "none") return Option.some(null)
      const amount = Money.parseUsd(text)
      return amount !== undefined && amount > 0 ? Option.some(amount) : Option.none()
    },
    (text) =>
      `--daily-budget-usd: "${text}" is neither an amount in USD above 0 with at most six decimals, such as 100 or 2.50, ` +
      `of at most ${Money.MAX_USD}, nor none`
  ),
  Flag.optional,
  Flag.withDescription(
    "The most the platform admits for the model per UTC day, summed over its tasks' prices across all accounts " +
      "(past it submissions are PLATFORM_BUDGET_EXCEEDED until 00:00 UTC), or none to remove it. Not given: the budget stays as it is."
  )
)

const priceList = Command.make("list", {}, () =>
  call(
    (admin) => admin.PriceList(),
    (list) =>
      Object.entries(list.models)
        .map(([model, entry]) => priceEntryLine(model, entry))
        .join("\n")
  )
).pipe(Command.withDescription("Show the price list in force."))

const priceSet = Command.make(
  "set",
  {
    model: Flag.String("model").pipe(Flag.withDescription("The model slug.")),
    micros: Flag.Int("micros").pipe(Flag.optional, Flag.withDescription("A flat price per task, in USD micro-units.")),
    usd: usdFlag("usd").pipe(Flag.optional, Flag.withDescription("A flat price per task, in USD.")),
    rateCard: Flag.String("rate-card").pipe(
      Flag.mapTryCatch(
        (text) => JSON.parse(text) as unknown,
        () => "--rate-card: not valid JSON"
      ),
      Flag.optional,
      Flag.withDescription('A rate card as JSON: [{"when":{...},"priceMicros":N}, ...] (see the price list format).')
    ),
    dailyBudget: dailyBudgetFlag
  },
  ({ dailyBudget, micros, model, rateCard, usd: usdPrice }) => {
    const prices = [micros, usdPrice, rateCard].filter(Option.isSome).length
    if (prices > 1 || (prices === 0 && Option.isNone(dailyBudget))) {
      return failWith("give a price (one of --micros, --usd or --rate-card), --daily-budget-usd, or both")
    }
    const entry =
      prices === 0
        ? undefined
        : Option.isSome(rateCard)
          ? { enabled: true, rateCard: rateCard.value }
          : { enabled: true, priceMicros: Option.getOrUndefined(micros) ?? Option.getOrUndefined(usdPrice) }
    return call(
      // The server checks the entry against its schema and the whole list against the catalog.
      (admin) =>
        admin.PriceSet({
          model,
          ...(entry === undefined ? {} : { entry: entry as PriceList.ModelPrice }),
          ...Option.match(dailyBudget, { onNone: () => ({}), onSome: (dailyBudgetMicros) => ({ dailyBudgetMicros }) })
        }),
      (set) => `${priceEntryLine(model, set)}; new submissions use it from now on.`
    )
  }
).pipe(
  Command.withDescription(
    "Set (and enable) one model's price, its daily platform budget, or both; what is not given stays as it is."
  )
)

const priceDisable = Command.make("disable", { model: Flag.String("model") }, ({ model }) =>
  call(
    (admin) => admin.PriceDisable({ model }),
    () => `Model ${model} disabled: submissions get MODEL_PRICE_UNAVAILABLE until its price is set again.`
  )
).pipe(Command.withDescription("Stop a model from being submitted, keeping its price."))

const heldTaskLine = (t: AdminRpc.HeldTask) =>
  `${t.id}  ${t.model}  ${t.accountId}  price ${usd(t.priceMicros)}  waiting ${t.ageSeconds} s  ` +
  `${t.errorCode ?? "-"}  upstream job ${t.upstreamRef ?? "unknown"}\n    last upstream answer: ${t.upstreamAnswer ?? "(none recorded)"}`

const taskList = Command.make(
  "list",
  {
    status: Flag.Literals("status", ["reconciliation_required"]).pipe(
      Flag.withDescription("The tasks' status; reconciliation_required, the operator queue.")
    ),
    limit: Flag.Int("limit").pipe(Flag.optional, Flag.withDescription("At most this many tasks (1 to 100, default 100).")),
    after: Flag.String("after").pipe(Flag.optional, Flag.withDescription("The next page: the id a page ended with."))
  },
  ({ after, limit, status }) =>
    call(
      (admin) =>
        admin.TaskList({
          status,
          ...Option.match(limit, { onNone: () => ({}), onSome: (limit) => ({ limit }) }),
          ...Option.match(after, { onNone: () => ({}), onSome: (after) => ({ after }) })
        }),
      (page) =>
        page.tasks.length === 0
          ? "No task is in reconciliation_required."
          : [
              "Tasks in reconciliation_required (resolve each with `task resolve`):",
              ...page.tasks.map(heldTaskLine),
              ...(page.next === null ? [] : [`More: --after ${page.next}`])
            ].join("\n")
    )
).pipe(Command.withDescription("List the operator queue: tasks held in reconciliation_required, with why."))

const chatPriceLine = (model: string, entry: ChatPrices.ChatModelPrice): string => {
  const tiers = (entry.tiers ?? []).map(
    (tier) =>
      `${tier.upToPromptTokens === null ? "any prompt" : `prompt ≤ ${tier.upToPromptTokens}`}: ` +
      `${usd(tier.promptMicrosPerMillion)} / ${usd(tier.completionMicrosPerMillion)} per million prompt / completion tokens`
  )
  return `${model}  ${entry.enabled ? "enabled" : "disabled"}  ${entry.provider}  context ${entry.contextLength}  ${tiers.join("; ") || "no price"}`
}

const chatPriceList = Command.make("list", {}, () =>
  call(
    (admin) => admin.ChatPriceList(),
    (list) =>
      Object.entries(list.models)
        .map(([model, entry]) => chatPriceLine(model, entry))
        .join("\n")
  )
).pipe(Command.withDescription("Show the chat price list in force."))

const chatPriceSet = Command.make(
  "set",
  {
    model: Flag.String("model").pipe(Flag.withDescription("The chat model id, as clients send it.")),
    tiers: Flag.String("tiers").pipe(
      Flag.mapTryCatch(
        (text) => JSON.parse(text) as unknown,
        () => "--tiers: not valid JSON"
      ),
      Flag.optional,
      Flag.withDescription(
        'Rates by prompt size as JSON: [{"upToPromptTokens":N|null,"promptMicrosPerMillion":N,"completionMicrosPerMillion":N}, ...], the last tier null.'
      )
    ),
    provider: Flag.String("provider").pipe(
      Flag.optional,
      Flag.withDescription("The upstream serving the model (local: the offline model).")
    ),
    contextLength: Flag.Int("context-length").pipe(Flag.optional, Flag.withDescription("The model's context length, in tokens."))
  },
  ({ contextLength, model, provider, tiers }) =>
    call(
      // The server checks the entry against its schema and the whole list.
      (admin) =>
        admin.ChatPriceSet({
          model,
          ...Option.match(tiers, {
            onNone: () => ({}),
            onSome: (tiers) => ({ tiers: tiers as ReadonlyArray<ChatPrices.ChatPriceTier> })
          }),
          ...Option.match(provider, { onNone: () => ({}), onSome: (provider) => ({ provider }) }),
          ...Option.match(contextLength, { onNone: () => ({}), onSome: (contextLength) => ({ contextLength }) })
        }),
      (set) => `${chatPriceLine(model, set)}; new chat requests use it from now on, in every server within seconds.`
    )
).pipe(
  Command.withDescription(
    "Set (and enable) one chat model's tiers, upstream or context length; what is not given stays as it is."
  )
)

const chatPriceDisable = Command.make("disable", { model: Flag.String("model") }, ({ model }) =>
  call(
    (admin) => admin.ChatPriceDisable({ model }),
    () => `Chat model ${model} disabled: it leaves the model list, and requests for it are refused until its price is set again.`
  )
).pipe(Command.withDescription("Stop a chat model from being used, keeping its price."))

const chatMargin = Command.make(
  "chat-margin",
  {
    from: Flag.String("from").pipe(
      Flag.optional,
      Flag.withDescription("Requests created from (ISO 8601; default: 24 hours before --to).")
    ),
    to: Flag.String("to").pipe(Flag.optional, Flag.withDescription("Requests created before (ISO 8601; default: now)."))
  },
  ({ from, to }) =>
    call(
      (admin) =>
        admin.ChatMargin({
          ...Option.match(from, { onNone: () => ({}), onSome: (from) => ({ from }) }),
          ...Option.match(to, { onNone: () => ({}), onSome: (to) => ({ to }) })
        }),
      (margin) =>
        [
          `Chat requests created from ${margin.from} to ${margin.to}:`,
          ...(margin.rows.length === 0
            ? ["none settled."]
            : margin.rows.map(
                (row) =>
                  `${row.model}  ${row.upstream ?? "(no upstream)"}  ${row.requests} requests  charged ${usd(row.chargedMicros)}  ` +
                  `upstream cost ${usd(row.upstreamCostMicros)}  margin ${usd(row.marginMicros)}  shortfall ${usd(row.shortfallMicros)}`
              ))
        ].join("\n")
    )
).pipe(
  Command.withDescription(
    "Per chat model and upstream: requests, charged, upstream cost (the upstream's cost per token), margin, and shortfall (usage cost beyond the reservation, not charged)."
  )
)

const revenue = Command.make(
  "revenue",
  {
    from: Flag.String("from").pipe(Flag.withDescription("The first UTC day (YYYY-MM-DD).")),
    to: Flag.String("to").pipe(Flag.withDescription("The last UTC day, included (YYYY-MM-DD)."))
  },
  ({ from, to }) => call((admin) => admin.Revenue({ from, to }), RevenueTable.render)
).pipe(
  Command.withDescription(
    "Per UTC day and model: tasks charged and released (from the ledger), settled chat requests with their upstream cost and shortfall; refunds per day; totals."
  )
)

const taskResolve = Command.make(
  "resolve",
  {
    task: Flag.String("task").pipe(Flag.withDescription("The task id (task_...).")),
    outcome: Flag.Literals("outcome", ["succeeded", "failed"]),
    reason: Flag.String("reason").pipe(
      Flag.withDescription("Why (kept as the note of the ledger entries the resolution writes).")
    ),
    account: accountFlag.pipe(Flag.optional, Flag.withDescription("The task's account (needed for succeeded).")),
    charge: usdFlag("charge-usd").pipe(
      Flag.optional,
      Flag.withDescription("What a succeeded task costs, at most its quote (default: the quote).")
    ),
    resultUrls: Flag.String("result-url").pipe(
      Flag.atLeast(0),
      Flag.withDescription("A public https link to a result, fetched by the server (repeatable).")
    ),
    resultFiles: Flag.String("result-file").pipe(Flag.atLeast(0), Flag.withDescription("A result file to upload (repeatable).")),
    contentType: Flag.String("content-type").pipe(
      Flag.optional,
      Flag.withDescription("The results' content type (default: from each name's extension).")
    )
  },
  ({ account, charge, contentType, outcome, reason, resultFiles, resultUrls, task }) =>
    Effect.gen(function* () {
      const results = yield* ResultFlags.read({
        urls: resultUrls,
        files: resultFiles,
        contentType: Option.getOrUndefined(contentType)
      }).pipe(Effect.catch(failWith))
      return yield* call(
        (admin) =>
          admin.TaskResolve({
            taskId: task,
            outcome,
            reason,
            ...(results.length === 0 ? {} : { results }),
            ...Option.match(account, { onNone: () => ({}), onSome: (accountId) => ({ accountId }) }),
            ...Option.match(charge, { onNone: () => ({}), onSome: (chargeMicros) => ({ chargeMicros }) })
          }),
        (t) =>
          `Task ${t.id} is now ${t.status}` +
          (t.chargedMicros === null ? "; its reservation is released." : `; charged ${usd(t.chargedMicros)}.`)
      )
    })
).pipe(
  Command.withDescription(
    "Settle a task held in reconciliation_required: succeeded with its results (--result-url, --result-file), or failed."
  )
)

const signInCode = Command.make("signin-code", { account: accountFlag }, ({ account }) =>
  call(
    (admin) => admin.SignInCodeCreate({ accountId: account }),
    (created) =>
      [
        `Sign-in code for ${created.accountId} (shown once; it works once, until ${created.expiresAt}):`,
        created.code,
        "The account's owner enters it instead of an API key on the sign-in page their MCP client opens."
      ].join("\n")
  )
).pipe(Command.withDescription("Make a one-time code an account's owner enters on the MCP sign-in page instead of an API key."))

const userInvite = Command.make(
  "invite",
  {
    email: Argument.String("email").pipe(Argument.withDescription("Who may sign up with the link.")),
    account: accountFlag.pipe(
      Flag.optional,
      Flag.withDescription("Into this account (acct_...) as a member; without, the new user gets an account of their own.")
    )
  },
  ({ account, email }) =>
    call(
      (admin) =>
        admin.UserInvite({ email, ...Option.match(account, { onNone: () => ({}), onSome: (accountId) => ({ accountId }) }) }),
      (invitation) =>
        [`Invitation for ${invitation.email} (mailed; it works once, until ${invitation.expiresAt}):`, invitation.link].join("\n")
    )
).pipe(Command.withDescription("Invite someone to sign up in the console (the only way in under SIGNUP=invite)."))

const operatorSet = (name: "add" | "remove") =>
  Command.make(
    name,
    { email: Argument.String("email").pipe(Argument.withDescription("The console user's email.")) },
    ({ email }) =>
      call(
        (admin) => admin.OperatorSet({ email, operator: name === "add" }),
        (set) => (set.operator ? `${set.email} is an operator now.` : `${set.email} is no longer an operator.`)
      )
  ).pipe(
    Command.withDescription(
      name === "add" ? "Mark a console user as an operator (the operator pages)." : "Take a console user's operator mark off."
    )
  )

const signInLine = (signIn: AdminRpc.McpSignIn) =>
  `${signIn.id}  ${signIn.clientName ?? "(unnamed client)"} [${signIn.clientId}]  ${signIn.scopes.join(" ")}  ` +
  `signed in ${signIn.createdAt}${signIn.apiKeyId === null ? " with a sign-in code" : ` with key ${signIn.apiKeyId}`}, ` +
  `last refreshed ${signIn.lastRefreshedAt}, ends ${signIn.expiresAt} unless refreshed`

const mcpSignInList = Command.make("list", { account: accountFlag }, ({ account }) =>
  call(
    (admin) => admin.McpSignInList({ accountId: account }),
    (signIns) =>
      signIns.length === 0
        ? `${account} has no MCP sign-ins in use.`
        : [`MCP sign-ins of ${account} (newest first):`, ...signIns.map(signInLine)].join("\n")
  )
).pipe(Command.withDescription("List an account's MCP sign-ins that can still be used."))

const mcpSignInRevoke = Command.make(
  "revoke",
  {
    signIn: Argument.String("sign-in-id").pipe(Argument.withDescription("The sign-in's id, as `mcp sign-ins list` shows it.")),
    account: accountFlag.pipe(Flag.optional, Flag.withDescription("Only if the sign-in is of this account (acct_...)."))
  },
  ({ account, signIn }) =>
    call(
      (admin) =>
        admin.McpSignInRevoke({
          signInId: signIn,
          ...Option.match(account, { onNone: () => ({}), onSome: (accountId) => ({ accountId }) })
        }),
      (revoked) =>
        revoked.alreadyRevoked
          ? `MCP sign-in ${revoked.id} of ${revoked.accountId} was already revoked (${revoked.revokedAt}).`
          : `MCP sign-in ${revoked.id} of ${revoked.accountId} revoked: its tokens are refused from now on; the client must sign in again.`
    )
).pipe(Command.withDescription("Revoke an MCP sign-in: its access and refresh tokens stop working at once."))

const paymentLine = (p: AdminRpc.Payment) =>
  `${p.processor} ${p.paymentId}  ${usd(p.amountMicros)}  refunded ${usd(p.refundedMicros)}` +
  `${p.heldMicros > 0 ? `  held for disputes ${usd(p.heldMicros)}` : ""}  ${p.createdAt}`

const paymentList = Command.make("list", { account: accountFlag }, ({ account }) =>
  call(
    (admin) => admin.PaymentList({ accountId: account }),
    (payments) =>
      payments.length === 0
        ? `${account} has made no payments through the processor.`
        : [`Payments of ${account} (newest first):`, ...payments.map(paymentLine)].join("\n")
  )
).pipe(Command.withDescription("List an account's payments through the payment processor, with refunds and dispute holds."))

const paymentEventLine = (e: AdminRpc.PaymentEvent) =>
  `${e.receivedAt}  ${e.processor} ${e.eventId}  ${e.kind} ${e.paymentId}  ${JSON.stringify(e.detail)}  ` +
  (e.appliedAt === null ? `NOT APPLIED: ${e.problem ?? ""}` : `applied ${e.appliedAt}`)

const paymentEvents = Command.make(
  "events",
  {
    unapplied: Flag.Boolean("unapplied").pipe(
      Flag.withDescription("Only the events not applied: an unknown account, or waiting for their payment or dispute.")
    ),
    limit: Flag.Int("limit").pipe(
      Flag.withDefault(100),
      Flag.filterMap(
        (limit) => (limit >= 1 && limit <= 1000 ? Option.some(limit) : Option.none()),
        () => "--limit must be from 1 to 1000"
      ),
      Flag.withDescription("At most this many, 1 to 1000.")
    )
  },
  ({ limit, unapplied }) =>
    call(
      (admin) => admin.PaymentEvents({ unapplied, limit }),
      (events) =>
        events.length === 0
          ? unapplied
            ? "Every payment event received is applied."
            : "No payment events received."
          : events.map(paymentEventLine).join("\n")
    )
).pipe(Command.withDescription("List the payment processor's events as received, newest first."))

const dayFlag = (name: string, description: string) =>
  Flag.String(name).pipe(
    Flag.withMetavar("DATE"),
    Flag.optional,
    Flag.withDescription(description),
    Flag.filterMap(
      (text) => (Option.isNone(text) || !Number.isNaN(new Date(text.value).getTime()) ? Option.some(text) : Option.none()),
      (text) => `--${name}: "${String(text)}" is not an ISO 8601 date (write e.g. 2030-01-31)`
    )
  )

const paymentReconcile = Command.make(
  "reconcile",
  {
    from: dayFlag("from", "Start of the period, UTC (default: the start of yesterday)."),
    to: dayFlag("to", "End of the period, exclusive (default: the start of today).")
  },
  ({ from, to }) => {
    const today = Math.floor(Date.now() / 86_400_000) * 86_400_000
    const start = Option.match(from, { onNone: () => new Date(today - 86_400_000), onSome: (text) => new Date(text) })
    const end = Option.match(to, { onNone: () => new Date(today), onSome: (text) => new Date(text) })
    return call(
      (admin) => admin.PaymentReconcile({ from: start.toISOString(), to: end.toISOString() }),
      (found) =>
        found.length === 0
          ? `The ledger agrees with the processor from ${start.toISOString()} to ${end.toISOString()}.`
          : [
              `${found.length} discrepancies from ${start.toISOString()} to ${end.toISOString()}:`,
              ...found.map(
                (d) =>
                  `${d.paymentId} (${d.accountId ?? "no account"}): ${d.problem}: processor ${usd(d.processorMicros)}, ledger ${usd(d.ledgerMicros)}`
              )
            ].join("\n")
    )
  }
).pipe(
  Command.withDescription("Compare the processor's payments and refunds of a period with the ledger: any it lacks or has twice.")
)

const audit = Command.make("audit", {}, () =>
  call(
    (admin) => admin.Audit(),
    (findings) =>
      findings.length === 0
        ? "The books balance: every account's balance and reservations agree with its journal."
        : findings
            .map(
              (f) =>
                `${f.accountId}: cached balance ${usd(f.cached.balanceMicros)}, reserved ${usd(f.cached.reservedMicros)}; ` +
                `journal says ${usd(f.journal.balanceMicros)}, ${usd(f.journal.reservedMicros)}`
            )
            .join("\n")
  )
).pipe(Command.withDescription("Recompute every account from its journal and list disagreements."))

const blobsCopy = Command.make(
  "copy",
  { to: Flag.Literals("to", ["s3"]).pipe(Flag.withDescription("Where to: s3, the S3_BUCKET of the environment.")) },
  () =>
    Effect.gen(function* () {
      const flags = yield* admin
      // Loaded for this command only: the S3 client is not needed by the others.
      const BlobsCopy = yield* Effect.promise(() => import("./BlobsCopy.ts"))
      const summary = yield* BlobsCopy.run(flags.dataDir, flags.json).pipe(Effect.catch((error) => failWith(error.message)))
      yield* Console.log(
        flags.json
          ? JSON.stringify(summary, null, 2)
          : `${summary.copied} of ${summary.files} files copied (${(summary.bytesCopied / 1e6).toFixed(1)} MB), ` +
              `${summary.skipped} already in the bucket, ${summary.failed.length} failed` +
              summary.failed.map((f) => `\n  ${f.key}: ${f.message}`).join("")
      )
      if (summary.failed.length > 0) {
        return yield* failWith(`${summary.failed.length} files were not copied; run the command again to retry them.`)
      }
    })
).pipe(
  Command.withDescription(
    "Copy <data-dir>/blobs into the S3 bucket of S3_BUCKET (S3_PREFIX, S3_ENDPOINT, S3_REGION): resumable, files already there are skipped."
  )
)

export const command = admin.pipe(
  Command.withSubcommands([
    Command.make("account").pipe(
      Command.withDescription("Accounts."),
      Command.withSubcommands([accountCreate, accountList, accountShow, accountRetention])
    ),
    Command.make("key").pipe(Command.withDescription("API keys."), Command.withSubcommands([keyCreate, keyRevoke])),
    Command.make("credits").pipe(Command.withDescription("Prepaid credits."), Command.withSubcommands([creditsGrant])),
    refund,
    Command.make("price").pipe(
      Command.withDescription("The price list."),
      Command.withSubcommands([priceList, priceSet, priceDisable])
    ),
    chatMargin,
    revenue,
    Command.make("chat-price").pipe(
      Command.withDescription("The chat price list."),
      Command.withSubcommands([chatPriceList, chatPriceSet, chatPriceDisable])
    ),
    Command.make("task").pipe(Command.withDescription("Tasks."), Command.withSubcommands([taskList, taskResolve])),
    Command.make("payments").pipe(
      Command.withDescription("Payments through the payment processor (Stripe)."),
      Command.withSubcommands([paymentList, paymentEvents, paymentReconcile])
    ),
    audit,
    signInCode,
    userInvite,
    Command.make("operator").pipe(
      Command.withDescription("Console users marked as operators."),
      Command.withSubcommands([operatorSet("add"), operatorSet("remove")])
    ),
    Command.make("blobs").pipe(
      Command.withDescription("Uploads and result files, run here rather than on the server."),
      Command.withSubcommands([blobsCopy])
    ),
    Command.make("mcp").pipe(
      Command.withDescription("The MCP endpoint."),
      Command.withSubcommands([
        Command.make("sign-ins").pipe(
          Command.withDescription("MCP clients signed in to accounts (OAuth grants)."),
          Command.withSubcommands([mcpSignInList, mcpSignInRevoke])
        )
      ])
    )
  ])
)
