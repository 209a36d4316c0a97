/**
 * The eight MCP tools (search_models, get_model, create_task, wait_for_task, get_task,
 * list_tasks, cancel_task, get_balance), each a thin face of a kernel service for the signed-in account, with
 * Effect Schema arguments and results built from the kernel's. Refusals are tool errors carrying
 * the spec's `{ code, error }` body. The tool table: packages/mcp/README.md; idempotency and
 * download links: docs/decisions.md, MCP.
 */
import { createHash } from "node:crypto"
import type { ToolAnnotations } from "@modelcontextprotocol/server"
import { Clock, Effect, Option, Schedule, Schema } from "effect"
import {
  Catalog,
  Errors,
  Executors,
  Fingerprint,
  Ledger,
  Money,
  Pricer,
  PriceList,
  Provider,
  ResultUrls,
  Task,
  TaskRunner,
  TaskStatus,
  TaskView
} from "@taskmeter/kernel"
import type { Accounts, Scope, StoreError, TaskStore } from "@taskmeter/kernel"

/** The kernel services the tools use. */
export type Services = Catalog.Catalog | Pricer.Pricer | TaskRunner.TaskRunner | Ledger.Ledger | ResultUrls.ResultUrls

/** What a tool call knows about its circumstances. */
export interface Call {
  readonly caller: Accounts.Caller
  /** The service's public origin, for absolute result links (`url` and `downloadUrl`). */
  readonly baseUrl: string
  /** Reports progress to the client, when it asked for progress (a no-op otherwise). */
  readonly progress: (progress: number, total: number, message: string) => Effect.Effect<void>
}

export interface Outcome<A> {
  readonly structured: A
  /** One or two sentences for the model and the person reading along. */
  readonly summary: string
}

export interface Tool<I = any, O = any> {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly annotations: ToolAnnotations
  readonly input: Schema.Codec<I, any>
  readonly output: Schema.Codec<O, any>
  readonly scope: Scope.Scope | null
  /**
   * Arguments whose strings the tool's own validation judges, U+0000 and unpaired surrogates
   * included, answering the API's code for that value as POST /api/v1/jobs does (`model`:
   * MODEL_NOT_FOUND; the model `input`: INVALID_MODEL_INPUT naming the field; `idempotencyKey`:
   * INVALID_IDEMPOTENCY_KEY).
   * The handler's INVALID_REQUEST for unstorable strings covers every other argument.
   */
  readonly validatesOwnText?: ReadonlyArray<string>
  readonly run: (
    args: I,
    call: Call
  ) => Effect.Effect<Outcome<O>, Errors.ApiError | StoreError.StoreUnavailable | Accounts.AccountNotFound, Services>
}

const tool = <I, O>(definition: Tool<I, O>): Tool<I, O> => definition

/** Exactly the catalog's categories: `satisfies` fails the build if one is added or removed. */
const categories = { image: true, video: true, audio: true, text: true } satisfies { readonly [C in Catalog.Category]: true }
const Category = Schema.Literals(Object.keys(categories) as Array<Catalog.Category>)

const TaskIdArgument = Schema.String.annotate({ description: "A task id (task_…), as create_task or list_tasks gave it." })

const Asset = Schema.Struct({
  ...Task.Asset.fields,
  url: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "Absolute download link of a file result; it takes an API key of the account as " +
        "`Authorization: Bearer <key>`. Without an API key, use downloadUrl."
    })
  ),
  downloadUrl: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "Absolute signed download link of a file result that needs no credentials (send no " +
        "Authorization header); it serves this one file until downloadUrlExpiresAt. Fetch get_task again for a fresh one."
    })
  ),
  downloadUrlExpiresAt: Schema.optionalKey(
    Schema.String.annotate({
      description: "When downloadUrl stops working (ISO 8601)."
    })
  )
})

const taskFields = { ...Task.Task.fields, assets: Schema.Array(Asset) }
const TaskResult = Schema.Struct(taskFields)

const ModelSummary = Schema.Struct({
  slug: Schema.String,
  title: Schema.String,
  category: Category,
  description: Schema.String,
  outputs: Schema.String.annotate({ description: "What one task produces." }),
  price: PriceList.PublicPrice,
  provider: Schema.NullOr(Schema.String).annotate({
    description:
      'What runs the model\'s tasks: an upstream, or "simulated" (placeholder results generated offline, not by ' +
      "the model); null when nothing does and create_task answers EXECUTION_UNAVAILABLE."
  })
})

/** The provider running each model, from the Executors when the server has them (null otherwise). */
const providerOf = Effect.map(
  Effect.serviceOption(Executors.Executors),
  (executors) => (slug: string) =>
    Option.match(executors, { onNone: () => null, onSome: (e) => e.adapterFor(slug)?.provider ?? null })
)

const Balance = Schema.Struct({
  balanceMicros: Schema.Int.annotate({ description: "Credits held, in USD micro-units; below zero after an uncovered refund." }),
  reservedMicros: Money.Micros.annotate({ description: "Held for unfinished tasks; charged only if they succeed." }),
  availableMicros: Schema.Int.annotate({ description: "What new tasks can spend: balance minus reserved." }),
  paymentReview: Schema.Boolean.annotate({
    description: "True while a refund left the balance uncovered: no task can be submitted."
  }),
  currency: Schema.Literal("USD")
})

const usd = (micros: number) => `${Money.formatUsd(micros)} USD`

const requireAccount = (error: Accounts.AccountNotFound) =>
  Effect.fail(new Errors.AuthRequired({ message: `The account ${error.accountId} no longer exists; sign in again.` }))

/** The task as its owner sees it, with absolute links and a freshly signed download link per file result. */
const present = (record: TaskStore.TaskRecord, baseUrl: string) =>
  Effect.gen(function* () {
    const links = yield* ResultUrls.ResultUrls
    const now = new Date(yield* Clock.currentTimeMillis)
    const assets = yield* Effect.forEach(record.assets, (stored) =>
      Effect.gen(function* () {
        const asset = TaskView.asset(stored, now)
        if (stored.resultId === undefined || asset.url === undefined) return asset
        const link = yield* links.sign(record.accountId, stored.resultId)
        return {
          ...asset,
          url: new URL(asset.url, baseUrl).href,
          downloadUrl: new URL(link.path, baseUrl).href,
          downloadUrlExpiresAt: link.expiresAt.toISOString()
        }
      })
    )
    return { ...TaskView.task(record, now), assets } satisfies typeof TaskResult.Type
  })

const SIMULATED_NOTE =
  " It runs on the simulated provider: its results are placeholder files generated offline, not the model's work."

/** Says so when the simulated provider runs the task: its results are generated offline, not by the model. */
const simulatedNote = (task: typeof TaskResult.Type): string => (task.provider === Provider.SIMULATED ? SIMULATED_NOTE : "")

const describeTask = (task: typeof TaskResult.Type): string => `${describeStatus(task)}${simulatedNote(task)}`

const describeStatus = (task: typeof TaskResult.Type): string => {
  const price = `${usd(task.priceMicros)} (${task.priceMicros} micros)`
  switch (task.status) {
    case "succeeded":
      return (
        `Task ${task.id} (${task.model}) succeeded with ${task.assets.length} result${task.assets.length === 1 ? "" : "s"}; charged at most ${price}.` +
        (task.assets.some((asset) => asset.downloadUrl !== undefined)
          ? " Download files at their downloadUrl (no credentials needed, until downloadUrlExpiresAt)."
          : "")
      )
    case "failed":
      return `Task ${task.id} (${task.model}) failed${task.errorCode ? ` (${task.errorCode})` : ""}; nothing was charged.`
    case "reconciliation_required":
      return `Task ${task.id} (${task.model}) needs review of its outcome; keep its id and do not resubmit it. ${price} stays reserved until it is settled.`
    default:
      return `Task ${task.id} (${task.model}) is ${task.status}; ${price} is reserved.`
  }
}

const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,128}$/

export const searchModels = tool({
  name: "search_models",
  title: "Search models",
  description:
    "Find models to run. Every word of `query` must appear in a model's slug, title or description " +
    "(an empty query lists all), optionally within one category (image, video, audio, text). Returns each " +
    "model's slug, what it produces, and its price: flat, or with a rate card the lowest price it can quote. " +
    "Call get_model for a model's input fields and an exact quote.",
  annotations: { title: "Search models", readOnlyHint: true, openWorldHint: false },
  input: Schema.Struct({
    query: Schema.optionalKey(
      Schema.String.check(Schema.isMaxLength(200)).annotate({
        description: 'Words to look for, e.g. "text to video"; empty or absent lists every model.'
      })
    ),
    category: Schema.optionalKey(Category)
  }),
  output: Schema.Struct({ models: Schema.Array(ModelSummary) }),
  scope: null,
  run: (args) =>
    Effect.gen(function* () {
      const catalog = yield* Catalog.Catalog
      const provider = yield* providerOf
      const prices = yield* Effect.map(
        (yield* Pricer.Pricer).prices,
        (all) => new Map(all.models.map((price) => [price.model, price]))
      )
      const models = catalog.search(args.query ?? "", args.category).flatMap((model) => {
        const price = prices.get(model.slug)
        return price === undefined
          ? []
          : [
              {
                slug: model.slug,
                title: model.title,
                category: model.category,
                description: model.description,
                outputs: model.outputs,
                price,
                provider: provider(model.slug)
              }
            ]
      })
      return {
        structured: { models },
        summary:
          models.length === 0
            ? "No model matches; try fewer or other words, or no query to list every model."
            : `${models.length} model${models.length === 1 ? "" : "s"} found.`
      }
    })
})

export const getModel = tool({
  name: "get_model",
  title: "Get a model",
  description:
    "Describe one model: its input JSON Schema (fields, defaults, limits), what it produces and its " +
    "price. Pass `input` to get the exact price of that input (defaults applied) without submitting anything; " +
    "send that price as create_task's expectedPriceMicros.",
  annotations: { title: "Get a model", readOnlyHint: true, openWorldHint: false },
  input: Schema.Struct({
    model: Schema.String.annotate({ description: "A model slug, as search_models lists them." }),
    input: Schema.optionalKey(
      Schema.Record(Schema.String, Schema.Unknown).annotate({
        description: "An input to quote, with the model's fields."
      })
    )
  }),
  output: Schema.Struct({
    ...ModelSummary.fields,
    deprecated: Schema.Boolean,
    inputSchema: Schema.Record(Schema.String, Schema.Unknown).annotate({
      description: "JSON Schema (draft 2020-12) of the model's `input`; fields with a default may be omitted."
    }),
    quote: Schema.optionalKey(
      Schema.Struct({
        ...Pricer.Quote.fields,
        input: Schema.Record(Schema.String, Schema.Unknown).annotate({ description: "The quoted input, defaults applied." })
      })
    )
  }),
  scope: null,
  validatesOwnText: ["model", "input"],
  run: (args) =>
    Effect.gen(function* () {
      const catalog = yield* Catalog.Catalog
      const pricer = yield* Pricer.Pricer
      const provider = (yield* providerOf)(args.model)
      const model = yield* catalog.get(args.model)
      const price = (yield* pricer.prices).models.find((entry) => entry.model === model.slug)
      if (price === undefined) {
        return yield* new Errors.ModelPriceUnavailable({
          message: `Model ${model.slug} has no price and cannot be submitted.`,
          model: model.slug
        })
      }
      const quote =
        args.input === undefined
          ? undefined
          : yield* Effect.gen(function* () {
              const { input } = yield* catalog.validate(model.slug, args.input)
              return { ...(yield* pricer.quote(model.slug, input)), input }
            })
      return {
        structured: {
          slug: model.slug,
          title: model.title,
          category: model.category,
          description: model.description,
          outputs: model.outputs,
          price,
          provider,
          deprecated: model.deprecated,
          inputSchema: model.jsonSchema,
          ...(quote === undefined ? {} : { quote })
        },
        summary:
          (quote === undefined
            ? `${model.title} (${model.slug}): ${model.outputs}; ${price.priceMicros === null ? "no price" : `from ${usd(price.priceMicros)}`}.`
            : `${model.title} (${model.slug}) would cost ${usd(quote.priceMicros)} (${quote.priceMicros} micros) for this input.`) +
          (provider === Provider.SIMULATED ? SIMULATED_NOTE : "")
      }
    })
})

export const createTask = tool({
  name: "create_task",
  title: "Create a task (spends credits)",
  description:
    "Run a model as an asynchronous task. This spends credits: the quoted price is reserved from the " +
    "account's balance at once and charged only if the task succeeds (a failed task releases it). Give `model` " +
    "(a slug from search_models) and `input` (the model's fields, see get_model); pass expectedPriceMicros " +
    "(from get_model's quote) to refuse a changed price. Retrying with the same arguments, or the same " +
    "idempotencyKey, returns the same task and never charges twice; to run an identical input again, send a " +
    "new idempotencyKey. Returns the task (usually queued) with its price; follow it with wait_for_task.",
  annotations: {
    title: "Create a task (spends credits)",
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: true
  },
  input: Schema.Struct({
    model: Schema.String.annotate({ description: "A model slug, as search_models lists them." }),
    input: Schema.Record(Schema.String, Schema.Unknown).annotate({
      description: "The model's input fields; get_model gives their JSON Schema."
    }),
    expectedPriceMicros: Schema.optionalKey(
      Money.Micros.annotate({
        description:
          "The price the user agreed to, in USD micro-units; a different current price is refused (PRICE_CHANGED) before anything is reserved."
      })
    ),
    idempotencyKey: Schema.optionalKey(
      Schema.String.annotate({
        description:
          "1 to 128 printable ASCII characters identifying this submission; by default derived from the other arguments."
      })
    )
  }),
  output: Schema.Struct({
    ...taskFields,
    replayed: Schema.Boolean.annotate({
      description: "True when an earlier submission with the same idempotency key was returned; nothing new was reserved."
    }),
    idempotencyKey: Schema.String
  }),
  scope: "jobs:create",
  validatesOwnText: ["model", "input", "idempotencyKey"],
  run: (args, call) =>
    Effect.gen(function* () {
      const idempotencyKey =
        args.idempotencyKey ??
        `mcp-${createHash("sha256")
          .update(
            Fingerprint.canonicalJson({
              model: args.model,
              input: args.input,
              expectedPriceMicros: args.expectedPriceMicros ?? null
            })
          )
          .digest("hex")}`
      if (!IDEMPOTENCY_KEY.test(idempotencyKey)) {
        return yield* new Errors.InvalidIdempotencyKey({ message: "idempotencyKey: must be 1 to 128 printable ASCII characters" })
      }
      const runner = yield* TaskRunner.TaskRunner
      const { task, replayed } = yield* runner.submit(call.caller, {
        model: args.model,
        input: args.input,
        expectedPriceMicros: args.expectedPriceMicros,
        idempotencyKey
      })
      const view = yield* present(task, call.baseUrl)
      return {
        structured: { ...view, replayed, idempotencyKey },
        summary: replayed
          ? `This matches an earlier submission: task ${task.id} is returned again and nothing new was reserved. ${describeTask(view)}`
          : `Task ${task.id} was created: ${usd(task.priceMicros)} (${task.priceMicros} micros) quoted and reserved, charged only if it succeeds. Follow it with wait_for_task.`
      }
    })
})

const MAX_WAIT_SECONDS = 50
const DEFAULT_WAIT_SECONDS = 25
/** How often a wait reports progress while the task has not changed. */
const PROGRESS_MILLIS = 5_000
/** A wait refused by the process's wait bound (TaskRunner.awaitTask) tries again after this long. */
const BUSY_RETRY_MILLIS = 1_000

export const waitForTask = tool({
  name: "wait_for_task",
  title: "Wait for a task",
  description:
    `Wait until a task finishes, for at most timeoutSeconds (default ${DEFAULT_WAIT_SECONDS}, at most ` +
    `${MAX_WAIT_SECONDS}), reporting progress meanwhile. Returns the task as soon as it is final (succeeded, ` +
    "failed, reconciliation_required), or as it stands when the wait ends (finished: false): then call again " +
    "to keep waiting. Video and music can take minutes. Results are in `assets`: text inline, files as links " +
    "(`downloadUrl` needs no credentials and works for a limited time, `url` takes an API key).",
  annotations: { title: "Wait for a task", readOnlyHint: true, openWorldHint: false },
  input: Schema.Struct({
    id: TaskIdArgument,
    timeoutSeconds: Schema.optionalKey(
      Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_WAIT_SECONDS })).annotate({
        description: `How long to wait, in seconds (default ${DEFAULT_WAIT_SECONDS}).`
      })
    )
  }),
  output: Schema.Struct({
    ...taskFields,
    finished: Schema.Boolean.annotate({ description: "Whether the task reached a final status; if not, wait again." }),
    waitedSeconds: Schema.Number
  }),
  scope: "jobs:read",
  run: (args, call) =>
    Effect.gen(function* () {
      const runner = yield* TaskRunner.TaskRunner
      const timeoutMillis = (args.timeoutSeconds ?? DEFAULT_WAIT_SECONDS) * 1000
      const started = yield* Clock.currentTimeMillis
      const elapsed = Effect.map(Clock.currentTimeMillis, (now) => now - started)
      let record = yield* runner.get(call.caller, args.id)
      const first = record.status
      const report = Effect.flatMap(elapsed, (ms) =>
        call.progress(Math.floor(ms / 1000), timeoutMillis / 1000, `Waiting for task ${args.id} (${first} when the wait began)`)
      )
      yield* report
      yield* Effect.forkScoped(Effect.repeat(Effect.delay(report, PROGRESS_MILLIS), Schedule.forever))
      // Woken by the store as Prefer: wait is; only past the process's wait bound does it poll.
      for (let left = timeoutMillis; !TaskStatus.isTerminal(record.status) && left > 0; left = timeoutMillis - (yield* elapsed)) {
        const result = yield* runner.awaitTask(record, left)
        record = result.task
        if (!result.waited) {
          yield* Effect.sleep(Math.min(BUSY_RETRY_MILLIS, left))
          record = yield* runner.get(call.caller, args.id)
        }
      }
      const finished = TaskStatus.isTerminal(record.status)
      const view = yield* present(record, call.baseUrl)
      const waitedSeconds = Math.round((yield* elapsed) / 100) / 10
      return {
        structured: { ...view, finished, waitedSeconds },
        summary: finished
          ? describeTask(view)
          : `${describeTask(view)} Still working after ${waitedSeconds} s: call wait_for_task again.`
      }
    }).pipe(Effect.scoped)
})

export const getTask = tool({
  name: "get_task",
  title: "Get a task",
  description:
    "The current state of one task of this account: status, price, and results once it succeeded " +
    "(with fresh download links).",
  annotations: { title: "Get a task", readOnlyHint: true, openWorldHint: false },
  input: Schema.Struct({ id: TaskIdArgument }),
  output: TaskResult,
  scope: "jobs:read",
  run: (args, call) =>
    Effect.gen(function* () {
      const record = yield* (yield* TaskRunner.TaskRunner).get(call.caller, args.id)
      const view = yield* present(record, call.baseUrl)
      return { structured: view, summary: describeTask(view) }
    })
})

export const listTasks = tool({
  name: "list_tasks",
  title: "List tasks",
  description:
    "This account's latest tasks, newest first (up to `limit`, default 20, at most 100), optionally only those in one status.",
  annotations: { title: "List tasks", readOnlyHint: true, openWorldHint: false },
  input: Schema.Struct({
    status: Schema.optionalKey(TaskStatus.TaskStatus),
    limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 })))
  }),
  output: Schema.Struct({ tasks: Schema.Array(TaskResult) }),
  scope: "jobs:read",
  run: (args, call) =>
    Effect.gen(function* () {
      const page = yield* (yield* TaskRunner.TaskRunner).list(call.caller, { limit: args.limit ?? 20, status: args.status })
      const tasks = yield* Effect.forEach(page.tasks, (record) => present(record, call.baseUrl))
      return {
        structured: { tasks },
        summary: tasks.length === 0 ? "No tasks." : `${tasks.length} task${tasks.length === 1 ? "" : "s"}, newest first.`
      }
    })
})

export const cancelTask = tool({
  name: "cancel_task",
  title: "Cancel a task",
  description:
    "Cancel a task of this account that has not finished. A task not yet accepted by its provider ends failed " +
    "(CANCELED) at once and its reserved credits are released. A running task is canceled at its provider where " +
    "the provider can (pending: true; follow it with wait_for_task): if the provider confirms, it ends failed " +
    "(CANCELED) and nothing is charged; if it finished anyway, it is charged as usual. Calling again answers the " +
    "same; a task that already finished otherwise is refused (TASK_NOT_CANCELABLE).",
  annotations: { title: "Cancel a task", readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
  input: Schema.Struct({ id: TaskIdArgument }),
  output: Schema.Struct({
    ...taskFields,
    pending: Schema.Boolean.annotate({
      description: "True while the provider still has to confirm the cancel; the task's final status tells."
    })
  }),
  scope: "jobs:create",
  run: (args, call) =>
    Effect.gen(function* () {
      const { task, pending } = yield* (yield* TaskRunner.TaskRunner).cancel(call.caller, args.id)
      const view = yield* present(task, call.baseUrl)
      return {
        structured: { ...view, pending },
        summary: pending
          ? `Task ${task.id} (${task.model}) is being canceled at its provider; call wait_for_task to see how it ends.`
          : describeTask(view)
      }
    })
})

export const getBalance = tool({
  name: "get_balance",
  title: "Get the credit balance",
  description:
    "The account's credits in USD micro-units (1 USD = 1000000): available to spend on new tasks, " +
    "reserved by unfinished tasks, and the balance.",
  annotations: { title: "Get the credit balance", readOnlyHint: true, openWorldHint: false },
  input: Schema.Struct({}),
  output: Balance,
  scope: "usage:read",
  run: (_args, call) =>
    Effect.gen(function* () {
      const balances = yield* (yield* Ledger.Ledger).balances(call.caller.accountId)
      return {
        structured: { ...balances, currency: "USD" as const },
        summary:
          `Available ${usd(balances.availableMicros)}, reserved ${usd(balances.reservedMicros)}, balance ${usd(balances.balanceMicros)}.` +
          (balances.paymentReview
            ? " A refund left the balance uncovered: no task can be submitted until credits are added."
            : "")
      }
    }).pipe(Effect.catchTag("AccountNotFound", requireAccount))
})

/** Every tool, in the order tools/list shows them. */
export const all: ReadonlyArray<Tool> = [
  searchModels,
  getModel,
  createTask,
  waitForTask,
  getTask,
  listTasks,
  cancelTask,
  getBalance
]
