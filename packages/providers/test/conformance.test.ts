import { AdapterConformance } from "@taskmeter/providers/testing"
import { Alpha, Delta, Epsilon, Gamma, Picgen, Simulated, Song } from "@taskmeter/providers"
import { fakeFal } from "./support/FakeFal.ts"
import { fakeMarket } from "./support/FakeMarket.ts"
import { fakeReplicate } from "./support/FakeReplicate.ts"
import { fakeSong } from "./support/FakeSong.ts"

const MARKET = "https://market.example.test"
const FAL = "https://queue.fal.example.test"
const REPLICATE = "https://replicate.example.test"
const SONG = "https://song.example.test"
const apiKey = "test-key"

AdapterConformance.suite("alpha", () => Alpha.make({ apiKey, baseUrl: MARKET }), { handlers: fakeMarket(MARKET).handlers })
AdapterConformance.suite("gamma", () => Gamma.make({ apiKey, baseUrl: MARKET }), {
  handlers: fakeMarket(MARKET, { results: (model) => (model === "grok-imagine/text-to-image" ? 6 : 1) }).handlers
})
AdapterConformance.suite("delta", () => Delta.make({ apiKey, baseUrl: MARKET }), { handlers: fakeMarket(MARKET).handlers })
AdapterConformance.suite("epsilon", () => Epsilon.make({ apiKey, baseUrl: FAL }), { handlers: fakeFal(FAL).handlers })
AdapterConformance.suite("picgen", () => Picgen.make({ apiKey, baseUrl: REPLICATE }), {
  handlers: fakeReplicate(REPLICATE).handlers
})
AdapterConformance.suite("song", () => Song.make({ apiKey, baseUrl: SONG }), { handlers: fakeSong(SONG).handlers })
AdapterConformance.suite("simulated (instant)", () => Simulated.make())
AdapterConformance.suite("simulated (delayed)", () => Simulated.make({ delayMs: 30 }))
