/**
 * The chat kernel's own CPU per request, without HTTP: ChatCompletions.create (price look-up,
 * prompt tokenizing, admission on the credit lease, settlement) against a provider that answers at
 * once (chat-mini, 20 completion tokens; a stream of 20 deltas in 2 chunks, as partsOf delivers
 * them) or, with UPSTREAM_URL, the OpenAI-compatible adapter calling that upstream (upstream.ts),
 * over storage-memory or PostgreSQL (STORE=pg, a schema of its own dropped at the end), key checked
 * as the route does (authenticateCached). Prints per kind and concurrency this process's CPU µs per request, the
 * median of rounds. Usage: node bench/chat/kernel.ts [--requests 5000] [--concurrency 1,32] [--rounds 3]
 */
import { parseArgs } from "node:util"
import { Effect, Layer, Stream } from "effect"
import { Accounts, Catalog, ChatCompletions, type ChatProvider, Ledger, Money, Pricer, TaskRunner } from "@taskmeter/kernel"
import { OpenAiCompatible } from "@taskmeter/providers"
import { MemoryStore } from "@taskmeter/storage-memory"
import { ChatServices } from "@taskmeter/http"
import { scratchPgStore } from "../support/scratchPgStore.ts"

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "5000" },
    concurrency: { type: "string", default: "1,32" },
    rounds: { type: "string", default: "3" }
  }
})
const REQUESTS = Number(values.requests)

const usage = { promptTokens: 20, completionTokens: 20 }
const delta = (content: string, finishReason: string | null = null): ChatProvider.ChatStreamPart => ({
  _tag: "Delta",
  delta: { content },
  finishReason
})
const chunks: ReadonlyArray<ReadonlyArray<ChatProvider.ChatStreamPart>> = [
  [delta("word ")],
  [...Array.from({ length: 18 }, () => delta("word ")), delta("end", "stop"), { _tag: "Usage", usage }]
]

const instant: ChatProvider.ChatProviderV1 = {
  specificationVersion: "v1",
  provider: "upstream",
  complete: () => Effect.succeed({ message: { role: "assistant", content: "word ".repeat(20) }, finishReason: "stop", usage }),
  stream: () => Effect.succeed(Stream.fromArrays(...chunks))
}

const store = process.env.STORE === "pg" ? scratchPgStore("bench_chat_kernel") : MemoryStore.layer

const provider =
  process.env.UPSTREAM_URL === undefined
    ? instant
    : OpenAiCompatible.make({ provider: "upstream", baseUrl: process.env.UPSTREAM_URL, apiKey: "bench" })

const services = ChatServices.layer({
  providers: [provider],
  limits: { requestsPerMinute: 100_000_000, maxOpenRequests: 100_000 }
}).pipe(
  Layer.provideMerge(
    TaskRunner.layer({ executorAvailable: () => true }).pipe(
      Layer.provideMerge(Accounts.layer({ defaultRateLimitPerMinute: 100_000_000 }))
    )
  ),
  Layer.provideMerge(Ledger.layer),
  Layer.provideMerge(Pricer.layerDefault),
  Layer.provideMerge(Catalog.layer),
  Layer.provideMerge(store)
)

const program = Effect.gen(function* () {
  const accounts = yield* Accounts.Accounts
  const completions = yield* ChatCompletions.ChatCompletions
  const { key } = yield* accounts.create({ name: "bench", credits: Money.micros(1_000_000_000) })
  const messages = [{ role: "user", content: "Summarize the plot of a short story about a lighthouse keeper." }]
  const one = (stream: boolean) =>
    Effect.scoped(
      Effect.gen(function* () {
        const caller = yield* accounts.authenticateCached(key.secret)
        const created = yield* completions.create(caller, {
          model: "chat-mini",
          messages,
          stream,
          maxTokens: 256,
          forward: { messages }
        })
        if (created._tag === "Stream") yield* Stream.runDrain(created.events)
      })
    )
  const cpuUs = (concurrency: number, stream: boolean, requests: number) =>
    Effect.gen(function* () {
      const before = process.cpuUsage()
      yield* Effect.forEach(Array.from({ length: requests }), () => one(stream), { concurrency, discard: true })
      const used = process.cpuUsage(before)
      return (used.user + used.system) / requests
    })
  yield* cpuUs(8, false, 1000)
  yield* cpuUs(8, true, 1000)
  console.log("| request | concurrency | kernel CPU µs per request |\n|---|---|---|")
  for (const concurrency of values.concurrency.split(",").map(Number)) {
    for (const stream of [false, true]) {
      const rounds: Array<number> = []
      for (let round = 0; round < Number(values.rounds); round++) rounds.push(yield* cpuUs(concurrency, stream, REQUESTS))
      rounds.sort((a, b) => a - b)
      console.log(
        `| ${stream ? "stream" : "non-stream"} | ${concurrency} | ${rounds[Math.floor(rounds.length / 2)]!.toFixed(0)} |`
      )
    }
  }
})

await Effect.runPromise(Effect.scoped(Effect.provide(program, services)))
