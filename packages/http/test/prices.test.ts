/**
 * The price list of the composed server lives in the database. A database without one starts
 * from DATA_DIR/prices.json (an install upgraded from the file) or the shipped defaults, once.
 * Two servers of `npm start` (main.ts `server` over `serverStorage`, no workers) on one
 * PostgreSQL schema, each with a data directory of its own as on two machines, quote alike: a
 * price set through the admin service of one is quoted by the other, and price changes sent to
 * both at once all survive. The chat price list alike: set or disabled through one, followed by the other.
 */
import { randomUUID } from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Layer, Redacted } from "effect"
import { describe, expect, it } from "@effect/vitest"
import { type Money, Pricer, PriceStore } from "@taskmeter/kernel"
import { MemoryStore } from "@taskmeter/storage-memory"
import * as Main from "../src/main.ts"
import { admin, eventually, fetchJson, SERVED as SONG, SERVED_PRICE as SONG_DEFAULT, twoServers } from "./support/Servers.ts"

const dataDirWith = (prices?: unknown) => {
  const dataDir = mkdtempSync(join(tmpdir(), "taskmeter-prices-"))
  if (prices !== undefined)
    writeFileSync(Main.pricesFileOf(dataDir), typeof prices === "string" ? prices : JSON.stringify(prices))
  return dataDir
}

/** The kernel of the composed server over `stores`, with the data directory `dataDir`. */
const kernelOn = (stores: Context.Context<MemoryStore.Stores>, dataDir: string) =>
  Layer.build(
    Main.kernel({
      settings: Main.defaults,
      adapters: [],
      mediaUrls: { baseUrl: "http://127.0.0.1", secret: Redacted.make(randomUUID() + randomUUID()) },
      pricesFile: Main.pricesFileOf(dataDir)
    }).pipe(Layer.provide(Layer.succeedContext(stores)))
  )

const songPrice = (kernel: Context.Context<Pricer.Pricer>) =>
  Effect.map(
    Pricer.Pricer.use((pricer) => pricer.quote(SONG, { prompt: "rain" })),
    (quote) => quote.priceMicros
  ).pipe(Effect.provide(kernel))

describe("the price list a database starts from", () => {
  it.live("DATA_DIR/prices.json, adopted once: a database holding a list never reads it again", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stores = yield* Layer.build(MemoryStore.layer)
        const saved = { models: { [SONG]: { enabled: true, priceMicros: 7_000 } } }
        expect(yield* songPrice(yield* kernelOn(stores, dataDirWith(saved)))).toBe(7_000)
        expect(yield* PriceStore.PriceStore.use((store) => store.current).pipe(Effect.provide(stores))).toMatchObject({
          version: 1,
          list: saved
        })

        const elsewhere = yield* kernelOn(stores, dataDirWith("{ not json"))
        expect(yield* songPrice(elsewhere)).toBe(7_000)
        expect(yield* PriceStore.PriceStore.use((store) => store.version).pipe(Effect.provide(stores))).toBe(1)
      })
    )
  )

  it.live("the shipped defaults when the data directory has no prices.json", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stores = yield* Layer.build(MemoryStore.layer)
        expect(yield* songPrice(yield* kernelOn(stores, dataDirWith()))).toBe(SONG_DEFAULT)
        expect((yield* PriceStore.PriceStore.use((store) => store.current).pipe(Effect.provide(stores)))?.list).toEqual(
          Pricer.defaultList
        )
      })
    )
  )

  it.live("an unreadable prices.json fails the start of a database without a list", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stores = yield* Layer.build(MemoryStore.layer)
        const error = yield* Effect.flip(kernelOn(stores, dataDirWith("{ not json")))
        expect(error._tag).toBe("PriceListInvalid")
        expect(yield* PriceStore.PriceStore.use((store) => store.current).pipe(Effect.provide(stores))).toBeUndefined()
      })
    )
  )
})

const publicPrice = (url: string, model: string) =>
  Effect.map(
    fetchJson(`${url}/api/v1/prices`),
    (reply) =>
      (reply.body.models as Array<{ model: string; priceMicros: number | null }>).find((entry) => entry.model === model)
        ?.priceMicros
  )

describe("two servers on one PostgreSQL", () => {
  it.live("a price set through the admin service of one is quoted by the other", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const [one, other] = yield* twoServers("http_prices")
        expect(yield* publicPrice(other, SONG)).toBe(SONG_DEFAULT)
        const { key } = yield* admin(other, (client) =>
          client.AccountCreate({ name: "acme", creditsMicros: 1_000_000 as Money.Micros })
        )

        yield* admin(one, (client) =>
          client.PriceSet({ model: SONG, entry: { enabled: true, priceMicros: 7_123 as Money.Micros } })
        )
        expect(yield* eventually(publicPrice(other, SONG), (price) => price === 7_123)).toBe(7_123)

        const submitted = yield* fetchJson(`${other}/api/v1/jobs`, {
          method: "POST",
          headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json", "idempotency-key": randomUUID() },
          body: JSON.stringify({ model: SONG, input: { prompt: "rain" }, expectedPriceMicros: 7_123 })
        })
        expect(submitted.status).toBe(202)
        expect(submitted.body).toMatchObject({ model: SONG, priceMicros: 7_123 })
      })
    )
  )

  it.live("price changes sent to both at once all survive", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const servers = yield* twoServers("http_prices")
        const rounds = [
          ["song-lyrics", "song-single-v5"],
          ["alpha-2-lite-text-to-image-economy", "alpha-2-lite-image-to-image-economy"],
          ["song-lyrics", "alpha-2-lite-text-to-image-economy"]
        ] as const
        const expected: Record<string, unknown> = {}
        for (const [round, models] of rounds.entries()) {
          const changes = models.map((model, i) => {
            const entry = { enabled: true, priceMicros: (1_000 * (round + 1) + i) as Money.Micros }
            expected[model] = entry
            return admin(servers[i]!, (client) => client.PriceSet({ model, entry }))
          })
          yield* Effect.all(changes, { concurrency: "unbounded" })
        }
        for (const url of servers) {
          const list = yield* eventually(
            admin(url, (client) => client.PriceList()),
            (found) =>
              Object.entries(expected).every(
                ([model, entry]) => found.models[model]?.priceMicros === (entry as { priceMicros: number }).priceMicros
              )
          )
          expect(list.models).toMatchObject(expected)
        }
      })
    )
  )

  it.live("a chat price set or disabled through the admin service of one is followed by the other", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const [one, other] = yield* twoServers("http_chat_prices")
        const localTiers = (url: string) =>
          Effect.map(
            fetchJson(`${url}/api/v1/chat/models`),
            (reply) =>
              (reply.body.data as Array<{ id: string; pricing: { tiers: Array<{ prompt_micros_per_million: number }> } }>).find(
                (model) => model.id === "taskmeter-local"
              )?.pricing.tiers
          )
        expect((yield* localTiers(other))?.map((tier) => tier.prompt_micros_per_million)).toEqual([100_000, 200_000])

        const set = yield* admin(one, (client) =>
          client.ChatPriceSet({
            model: "taskmeter-local",
            tiers: [
              {
                upToPromptTokens: null,
                promptMicrosPerMillion: 300_000 as Money.Micros,
                completionMicrosPerMillion: 900_000 as Money.Micros
              }
            ]
          })
        )
        expect(set).toMatchObject({ enabled: true, provider: "local", contextLength: 32_768 })
        const followed = yield* eventually(localTiers(other), (tiers) => tiers?.length === 1)
        expect(followed?.map((tier) => tier.prompt_micros_per_million)).toEqual([300_000])

        // A tier list the rules refuse changes nothing, and says why.
        const refused = yield* Effect.flip(
          admin(one, (client) =>
            client.ChatPriceSet({
              model: "taskmeter-local",
              tiers: [
                { upToPromptTokens: 10, promptMicrosPerMillion: 1 as Money.Micros, completionMicrosPerMillion: 1 as Money.Micros }
              ]
            })
          )
        )
        expect(refused).toMatchObject({ reason: "PriceListInvalid", message: expect.stringContaining("last tier must be null") })

        yield* admin(other, (client) => client.ChatPriceDisable({ model: "taskmeter-local" }))
        expect(yield* eventually(localTiers(one), (tiers) => tiers === undefined)).toBeUndefined()
        const unknown = yield* Effect.flip(admin(other, (client) => client.ChatPriceDisable({ model: "no-such-model" })))
        expect(unknown).toMatchObject({ reason: "InvalidRequest" })
      })
    )
  )
})
