/**
 * A server selling chat through upstreams loads the BPE tables of the models they serve when it
 * starts (ChatServices.warmTokenizers), not in its first chat request: only the encodings those
 * models count with, not the offline model's, not an unconfigured upstream's, once per process.
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { ChatPrices, type ChatProvider } from "@taskmeter/kernel"
import { LocalChatModel } from "@taskmeter/providers"
import * as ChatServices from "../../src/chat/ChatServices.ts"
import * as Logging from "../../src/observability/Logging.ts"

const tiers = [{ upToPromptTokens: null, promptMicrosPerMillion: 1_000_000, completionMicrosPerMillion: 2_000_000 }]
const priced = (provider: string, tokenizer?: string) => ({
  enabled: true,
  provider,
  contextLength: 128_000,
  ...(tokenizer === undefined ? {} : { tokenizer }),
  tiers
})

const priceList = {
  models: {
    "taskmeter-local": priced("local", "o200k_base"),
    // o200k_base by its id's family.
    "gpt-4o-mini": priced("upstream"),
    // Estimated from characters: no tables.
    "claude-sonnet": priced("upstream"),
    // Its upstream is not configured here.
    "gpt-4-legacy": priced("elsewhere", "cl100k_base"),
    // Not served by the upstream that the list names.
    "gpt-3.5-turbo": priced("upstream")
  }
}

const upstream: ChatProvider.ChatProviderV1 = {
  specificationVersion: "v1",
  provider: "upstream",
  serves: (model) => model !== "gpt-3.5-turbo",
  complete: () => Effect.die("not called"),
  stream: () => Effect.die("not called")
}

const warmed = async (providers: ReadonlyArray<ChatProvider.ChatProviderV1>) => {
  const lines: Array<string> = []
  await Effect.runPromise(
    ChatServices.warmTokenizers(providers).pipe(
      Effect.provide(ChatPrices.layer(priceList)),
      Effect.provide(Logging.layer({ format: "json", write: (line) => lines.push(line) }))
    )
  )
  return lines.map((line) => (JSON.parse(line) as { message: string }).message)
}

describe("ChatServices.warmTokenizers", () => {
  it("loads nothing for the offline model alone", async () => {
    expect(await warmed([LocalChatModel.make()])).toEqual([])
  })

  it("loads the encodings the upstreams' models count with, once per process", async () => {
    const first = await warmed([LocalChatModel.make(), upstream])
    expect(first).toHaveLength(1)
    expect(first[0]).toMatch(/^Loaded the o200k_base tokenizer for chat in \d+ ms$/)
    expect(await warmed([LocalChatModel.make(), upstream])).toEqual([])
  })
})
