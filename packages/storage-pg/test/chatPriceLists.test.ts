/**
 * The chat price list on the real PostgreSQL: two stores on one schema, each with its own pool and
 * its own ChatPrices, stand for two server processes. Both start from one seeded version, a change
 * made through one is priced by the other within moments (by notification: polling is off), and a
 * chat price save wakes no task price follower.
 */
import { Effect, Layer, Option, Schedule } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { ChatPrices, ChatPriceStore, Money, PriceStore } from "@taskmeter/kernel"
import { PgStore } from "../src/index.ts"
import { dropSchemaAfter, schemaName, url } from "./TestDatabase.ts"

const seed = {
  models: {
    "chat-mini": {
      enabled: true,
      provider: "openai",
      contextLength: 128_000,
      tiers: [{ upToPromptTokens: null, promptMicrosPerMillion: 150_000, completionMicrosPerMillion: 600_000 }]
    }
  }
}

/** A process: its stores and ChatPrices following the store, with polling too slow to matter. */
const process = (schema: string) =>
  ChatPrices.layerStore({ seed: Effect.succeed(seed), pollIntervalMs: 600_000 }).pipe(
    Layer.provideMerge(PgStore.layer({ url, schema, maxConnections: 4 }))
  )

const tiersOf = (model: string) =>
  ChatPrices.ChatPrices.use((prices) => prices.lookup(model)).pipe(Effect.map((entry) => entry?.tiers))

describe("chat price lists on PostgreSQL", () => {
  it.live("a change made in one process is priced by another within moments", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const schema = schemaName()
        yield* Layer.build(dropSchemaAfter(schema))
        const [first, second] = yield* Effect.all([Layer.build(process(schema)), Layer.build(process(schema))], {
          concurrency: "unbounded"
        })
        // Seeded once, whichever process came first.
        expect(yield* PriceStore.PriceStore.use((store) => store.version).pipe(Effect.provide(first))).toBeUndefined()
        expect(yield* ChatPriceStore.ChatPriceStore.use((store) => store.version).pipe(Effect.provide(second))).toBe(1)
        expect(yield* tiersOf("chat-mini").pipe(Effect.provide(second))).toEqual(seed.models["chat-mini"].tiers)

        const taskFollower = yield* PriceStore.PriceStore.use((store) => store.subscribe).pipe(Effect.provide(second))
        const tiers: ReadonlyArray<ChatPrices.ChatPriceTier> = [
          {
            upToPromptTokens: 1_000,
            promptMicrosPerMillion: Money.micros(100_000),
            completionMicrosPerMillion: Money.micros(400_000)
          },
          {
            upToPromptTokens: null,
            promptMicrosPerMillion: Money.micros(200_000),
            completionMicrosPerMillion: Money.micros(800_000)
          }
        ]
        yield* ChatPrices.ChatPrices.use((prices) =>
          prices.updateModel("chat-mini", (current) => (current === undefined ? undefined : { ...current, tiers }))
        ).pipe(Effect.provide(first))

        const followed = yield* tiersOf("chat-mini").pipe(
          Effect.provide(second),
          Effect.repeat({
            until: (seen) => JSON.stringify(seen) === JSON.stringify(tiers),
            schedule: Schedule.spaced("20 millis")
          }),
          Effect.timeoutOption("5 seconds")
        )
        expect(followed).toEqual(Option.some(tiers))
        expect(Option.isSome(yield* Effect.timeoutOption(taskFollower, 300))).toBe(false)

        yield* ChatPrices.ChatPrices.use((prices) =>
          prices.updateModel("chat-mini", (current) => (current === undefined ? undefined : { ...current, enabled: false }))
        ).pipe(Effect.provide(second))
        const disabled = yield* ChatPrices.ChatPrices.use((prices) => prices.lookup("chat-mini")).pipe(
          Effect.provide(first),
          Effect.repeat({ until: (entry) => entry?.enabled === false, schedule: Schedule.spaced("20 millis") }),
          Effect.timeoutOption("5 seconds")
        )
        expect(Option.map(disabled, (entry) => entry?.enabled)).toEqual(Option.some(false))
      })
    )
  )
})
