/**
 * The `simulated` provider: serves every catalog model offline with real files of the right kind
 * (PNG, H.264 MP4, WAV, lyrics text; see `Render`), made deterministically from model and input.
 * It is `npm start`'s default executor and the benchmarks' upstream. Options: `delayMs` (per
 * category) before a job completes, `failureRate` (the same seeds fail every time, SIMULATED_FAILURE),
 * and `journal`, which makes submit idempotent per reference and gives `lookup`. `cancel` stops a
 * job still Pending (in this instance): it then polls Failed UPSTREAM_CANCELED.
 */
import { Clock, Config, Effect, Option } from "effect"
import { type Catalog, Provider } from "@taskmeter/kernel"
import * as ShippedCatalog from "../utils/ShippedCatalog.ts"
import * as UpstreamError from "../utils/UpstreamError.ts"
import * as Journal from "./Journal.ts"
import * as Plan from "./Plan.ts"
import * as Render from "./Render.ts"
import * as Seed from "./Seed.ts"

export interface Options {
  /** Milliseconds a job stays Pending; one number for all, or per category (others 0). Default 0. */
  readonly delayMs?: number | { readonly [category in Catalog.Category]?: number } | undefined
  /** Share of jobs that fail, chosen by seed. Default 0. */
  readonly failureRate?: number | undefined
  /** The models to serve; every model of `catalog` by default. */
  readonly models?: ReadonlyArray<string> | undefined
  /** The model definitions (categories and fields); the kernel's catalog by default. */
  readonly catalog?: ReadonlyArray<Catalog.ModelDefinition> | undefined
  readonly journal?: Journal.Journal | undefined
  readonly maxConcurrency?: number | undefined
}

/** The simulated provider's name, as tasks and GET /api/v1/models show it. */
export const PROVIDER = Provider.SIMULATED

export interface SimulatedProvider extends Provider.ProviderV1 {
  readonly lookup: NonNullable<Provider.ProviderV1["lookup"]>
  readonly cancel: NonNullable<Provider.ProviderV1["cancel"]>
  /** The journal of submissions, e.g. to count them in tests. */
  readonly journal: Journal.Journal
}

export const make = (options: Options = {}): SimulatedProvider => {
  const failureRate = options.failureRate ?? 0
  if (!(failureRate >= 0 && failureRate <= 1))
    throw new RangeError(`Simulated: failureRate must be within 0..1, not ${failureRate}`)
  const definitions = new Map((options.catalog ?? ShippedCatalog.models).map((model) => [model.slug, model]))
  const served = options.models ?? [...definitions.keys()]
  for (const slug of served) {
    if (!definitions.has(slug)) throw new Error(`Simulated: no definition for the model ${JSON.stringify(slug)}`)
  }
  const servedSet = new Set(served)
  const canceled = new Set<string>()
  const journal = options.journal ?? Journal.memory()
  const delayOf = (category: Catalog.Category) => {
    const delay = options.delayMs
    return typeof delay === "number" ? delay : (delay?.[category] ?? 0)
  }

  const definitionOf = (slug: string) => {
    const model = definitions.get(slug)
    return model !== undefined && servedSet.has(slug)
      ? Effect.succeed(model)
      : Effect.fail(UpstreamError.unsupportedModel(PROVIDER, slug))
  }

  const planOf = (slug: string, upstreamId: string) => {
    const plan = Plan.decode(upstreamId)
    return plan !== undefined && plan.model === slug
      ? Effect.succeed(plan)
      : Effect.fail(
          UpstreamError.terminal(UpstreamError.ErrorCodes.NotFound, `no simulated job ${upstreamId.slice(0, 60)} for ${slug}`)
        )
  }

  const submit: Provider.ProviderV1["submit"] = ({ model, input, reference }) =>
    Effect.gen(function* () {
      const definition = yield* definitionOf(model)
      const now = yield* Clock.currentTimeMillis
      const seed = Seed.of(model, input)
      const fresh = Plan.encode(
        Plan.make(definition, input, {
          seed,
          at: now,
          ready: now + delayOf(definition.category),
          fail: Seed.fraction(seed) < failureRate
        })
      )
      const upstreamId = yield* journal.record(reference, fresh)
      const plan = yield* planOf(model, upstreamId)
      return plan.ready <= now && !plan.fail
        ? { _tag: "Completed" as const, upstreamId, outputs: Render.outputs(plan) }
        : { _tag: "Accepted" as const, upstreamId }
    })

  const poll: Provider.ProviderV1["poll"] = ({ model, upstreamId }) =>
    Effect.gen(function* () {
      yield* definitionOf(model)
      const plan = yield* planOf(model, upstreamId)
      const now = yield* Clock.currentTimeMillis
      if (canceled.has(upstreamId)) {
        return {
          _tag: "Failed" as const,
          errorCode: UpstreamError.ErrorCodes.Canceled,
          message: "the simulated job was canceled"
        }
      }
      if (now < plan.ready) return { _tag: "Pending" as const, progress: (now - plan.at) / (plan.ready - plan.at) }
      if (plan.fail) {
        return {
          _tag: "Failed" as const,
          errorCode: UpstreamError.ErrorCodes.SimulatedFailure,
          message: "the simulated job failed (failureRate)"
        }
      }
      return { _tag: "Succeeded" as const, outputs: Render.outputs(plan) }
    })

  /** Like a queue's cancel: a job that already finished stays finished. */
  const cancel: SimulatedProvider["cancel"] = ({ model, upstreamId }) =>
    Effect.gen(function* () {
      yield* definitionOf(model)
      const plan = yield* planOf(model, upstreamId)
      if ((yield* Clock.currentTimeMillis) < plan.ready) canceled.add(upstreamId)
    })

  const lookup: SimulatedProvider["lookup"] = ({ model, reference }) =>
    Effect.gen(function* () {
      yield* definitionOf(model)
      const upstreamId = yield* journal.find(reference)
      return upstreamId === undefined || Plan.decode(upstreamId)?.model !== model ? undefined : { upstreamId }
    })

  return {
    specificationVersion: "v1",
    provider: PROVIDER,
    models: served,
    maxConcurrency: options.maxConcurrency,
    submit,
    poll,
    lookup,
    cancel,
    journal
  }
}

/**
 * `make` from SIMULATED_DELAY_MS (all categories; SIMULATED_VIDEO_DELAY_MS for video, the same
 * by default, so that video jobs can stay Pending with progress while the rest end at once), SIMULATED_FAILURE_RATE,
 * SIMULATED_JOURNAL_DIR (a shared directory journal) and SIMULATED_MAX_CONCURRENCY.
 */
export const config: Config.Config<SimulatedProvider> = Config.all({
  delayMs: Config.Int("SIMULATED_DELAY_MS").pipe(Config.withDefault(0)),
  videoDelayMs: Config.option(Config.Int("SIMULATED_VIDEO_DELAY_MS")),
  failureRate: Config.Number("SIMULATED_FAILURE_RATE").pipe(Config.withDefault(0)),
  journalDir: Config.option(Config.String("SIMULATED_JOURNAL_DIR")),
  maxConcurrency: Config.option(Config.Int("SIMULATED_MAX_CONCURRENCY"))
}).pipe(
  Config.map(({ delayMs, failureRate, journalDir, maxConcurrency, videoDelayMs }) =>
    make({
      delayMs: {
        image: delayMs,
        audio: delayMs,
        text: delayMs,
        video: Option.getOrElse(videoDelayMs, () => delayMs)
      },
      failureRate,
      journal: Option.match(journalDir, { onNone: () => Journal.memory(), onSome: Journal.directory }),
      maxConcurrency: Option.getOrUndefined(maxConcurrency)
    })
  )
)
