/**
 * The operator pages' changes in a real browser against the composed server, each checked
 * afterwards through the public API: Prices sets a rate card (a mistake in the form and one the
 * admin service finds are shown in words first) and a flat price, and disables a model, as GET
 * /api/v1/prices then shows; Chat prices, its list held back until a model is typed, fills the
 * form from the list once it arrives (keeping a field the operator edited), sets a chat model's
 * tiers (the service's refusal of a cheaper larger tier shown first) and disables it, GET
 * /api/v1/chat/models following both; the Reconciliation queue resolves a held task as succeeded
 * with a result fetched by link (msw serving it under a test address policy), and the task, its
 * file and its ledger entries (the operator's reason on each) are then the API's. Screenshots in
 * test/output/operator-changes, axe-clean in light and dark.
 */
import { fileURLToPath } from "node:url"
import { Effect, Layer } from "effect"
import { afterAll, afterEach, beforeAll, expect, layer } from "@effect/vitest"
import { HttpResponse, http } from "msw"
import { setupServer } from "msw/node"
import type { Page, Route } from "playwright-core"
import { OPERATOR_PATH } from "@taskmeter/http/AdminRpc"
import { AddressPolicy, Users } from "@taskmeter/kernel"
import { HeldTask } from "@taskmeter/kernel/testing"
import * as Browser from "./support/Browser.ts"
import * as ConsoleServer from "./support/ConsoleServer.ts"

const OUTPUT = fileURLToPath(new URL("../test/output/operator-changes/", import.meta.url))
const EMAIL = "omar@example.com"
const RATE_CARD_MODEL = "alpha-2-text-to-image-economy"
const FLAT_MODEL = "picgen-2-0-edit-economy"
const LYRICS_URL = "https://cdn.upstream.test/lyrics.txt"
const LYRICS = "Ledgers balance, line by line"

/** Links under `.upstream.test` resolve to a public address; msw answers the fetch. */
const upstreamDns: AddressPolicy.Policy = {
  allowLoopbackForTests: false,
  resolve: async (hostname) => {
    if (hostname.endsWith(".upstream.test")) return [{ address: "93.184.215.14", family: 4 }]
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" })
  }
}

const upstream = setupServer(
  http.get(LYRICS_URL, () => new HttpResponse(LYRICS, { headers: { "content-type": "text/plain; charset=utf-8" } }))
)
beforeAll(() => upstream.listen({ onUnhandledFrame: "bypass" }))
afterEach(() => upstream.resetHandlers())
afterAll(() => upstream.close())

const checkPage = async (page: Page, name: string) => {
  for (const result of await Browser.check(page, OUTPUT, name)) {
    expect(result.nonBlank, `${name} (${result.scheme}) is blank`).toBe(true)
    expect(result.violations, `${name} (${result.scheme})`).toEqual([])
  }
}

const openPage = async (page: Page, label: string, heading: string) => {
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: label, exact: true }).click()
  await page.getByRole("heading", { level: 1, name: heading }).waitFor()
}

/** GET on the API under the page's session. */
const apiGet = (page: Page, path: string): Promise<any> =>
  page.evaluate(async (path) => (await (globalThis as any).fetch(path)).json(), path)

const alertWith = (page: Page, text: string) => page.getByRole("alert").filter({ hasText: text }).waitFor()
const statusWith = (page: Page, text: string) => page.getByRole("status").filter({ hasText: text }).waitFor()

/**
 * Holds the page's next ChatPriceList call until `answer`; `asked` settles once the call is held.
 * The page posts the operator RPC to OPERATOR_PATH with a slash appended (effect's RpcClient joins
 * its URL to the request's empty path), which a glob ending in /operator/rpc does not match.
 */
const holdChatPriceList = async (page: Page) => {
  const isOperatorRpc = (url: URL) => url.pathname.replace(/\/$/u, "") === OPERATOR_PATH
  let held!: () => void
  const asked = new Promise<void>((done) => (held = done))
  let release!: () => void
  const released = new Promise<void>((done) => (release = done))
  const handler = async (route: Route) => {
    if (route.request().postDataJSON().tag === "ChatPriceList") {
      held()
      await released
    }
    await route.fallback()
  }
  await page.route(isOperatorRpc, handler)
  return {
    asked,
    answer: async () => {
      release()
      await page.unroute(isOperatorRpc, handler)
    }
  }
}

/** The model's entry in GET /api/v1/chat/models once `until` holds for it (the list follows the store). */
const chatModelOnceIt = async (page: Page, id: string, until: (model: any) => boolean): Promise<any> => {
  for (let tries = 0; tries < 100; tries++) {
    const model = (await apiGet(page, "/api/v1/chat/models")).data.find((m: any) => m.id === id)
    if (until(model)) return model
    await new Promise((done) => setTimeout(done, 100))
  }
  throw new Error(`GET /api/v1/chat/models never showed ${id} as expected`)
}

// The simulated provider runs one image model only, so no worker claims the held song-lyrics task.
const server = ConsoleServer.layer({}, { models: ["alpha-2-lite-text-to-image-economy"] }).pipe(
  Layer.provide(Layer.succeed(AddressPolicy.AddressPolicy, upstreamDns))
)

layer(server, { timeout: 60_000, excludeTestServices: true })("the operator pages' changes in a browser", (it) => {
  it.effect(
    "sets a rate card, a flat price and a chat price, disables, resolves a held task as succeeded; the API follows",
    () =>
      Effect.gen(function* () {
        const url = yield* ConsoleServer.baseUrl
        const browser = yield* Effect.promise(() => Browser.launch())
        yield* Effect.gen(function* () {
          const page = yield* Effect.promise(() => browser.context.newPage())
          const errors: Array<string> = []
          const accountId = yield* Effect.promise(async () => {
            await page.goto(`${url}/sign-in`)
            const status = await page.evaluate(
              async (email) =>
                (
                  await (globalThis as any).fetch("/api/v1/auth/sign-up", {
                    method: "POST",
                    headers: { "content-type": "application/json" },
                    body: JSON.stringify({ email, password: "a long enough passphrase" })
                  })
                ).status,
              EMAIL
            )
            expect(status).toBe(201)
            return (await apiGet(page, "/api/v1/auth/session")).account.id as string
          })
          expect(yield* (yield* Users.Users).setOperator(EMAIL, true)).toBe(true)
          page.on("console", (message) => {
            if (message.type() === "error") errors.push(message.text())
          })

          // A rate card: a mistake the form names, one the admin service finds, then the card set.
          yield* Effect.promise(async () => {
            await page.goto(`${url}/`)
            await openPage(page, "Prices", "Prices")
            const form = page.getByRole("form", { name: "Set a price or budget" })
            await form.getByLabel("Model").selectOption(RATE_CARD_MODEL)
            await form.getByLabel("A rate card: a price by input").check()
            const rule = (n: number) => form.getByRole("group", { name: `Rule ${n}` })
            // The editor starts from the model's card in force: 1k, 2k and 4k.
            expect(await rule(3).getByLabel(/^When/).inputValue()).toBe('{"resolution":"4k"}')
            await form.getByRole("button", { name: "Remove rule 3" }).click()
            await rule(1).getByLabel(/^When/).fill('{"resolution": ["1k", "2k"]}')
            await rule(1)
              .getByLabel(/^Price/)
              .fill("0.05")
            await rule(2).getByLabel(/^When/).fill('{"resolution": "8k"}')
            await rule(2)
              .getByLabel(/^Price/)
              .fill("nine cents")
            await form.getByRole("button", { name: "Set", exact: true }).click()
            await alertWith(page, 'Rule 2: the price "nine cents" is not an amount in USD')
            await rule(2)
              .getByLabel(/^Price/)
              .fill("0.09")
            await form.getByRole("button", { name: "Set", exact: true }).click()
            await alertWith(page, '"8k" never occurs')
            await rule(2).getByLabel(/^When/).fill('{"resolution": "4k"}')
            await form.getByRole("button", { name: "Set", exact: true }).click()
            await statusWith(page, `${RATE_CARD_MODEL} updated`)
            const row = page.getByRole("row").filter({ hasText: RATE_CARD_MODEL })
            await row.getByText('resolution is "4k": $0.09').waitFor()
            await checkPage(page, "prices-rate-card")

            const prices = await apiGet(page, "/api/v1/prices")
            expect(prices.models.find((m: any) => m.model === RATE_CARD_MODEL)).toEqual({
              model: RATE_CARD_MODEL,
              enabled: true,
              currency: "USD",
              priceMicros: 50_000,
              rateCard: [
                { when: { resolution: ["1k", "2k"] }, priceMicros: 50_000 },
                { when: { resolution: "4k" }, priceMicros: 90_000 }
              ]
            })

            // A flat price, then the model disabled.
            await form.getByLabel("Model").selectOption(FLAT_MODEL)
            await form.getByLabel("A flat price per task").check()
            await form.getByLabel("Flat price (USD)").fill("0.03")
            await form.getByRole("button", { name: "Set", exact: true }).click()
            await statusWith(page, `${FLAT_MODEL} updated`)
            const flatPrice = async () => (await apiGet(page, "/api/v1/prices")).models.find((m: any) => m.model === FLAT_MODEL)
            expect(await flatPrice()).toMatchObject({ enabled: true, priceMicros: 30_000 })
            await page.getByRole("button", { name: `Disable ${FLAT_MODEL}` }).click()
            await statusWith(page, `${FLAT_MODEL} disabled`)
            expect(await flatPrice()).toMatchObject({ enabled: false, priceMicros: 30_000 })
          })

          // A chat price: the form filled from a list that arrives after the model is typed; tiers the
          // service refuses, then set; then disabled.
          yield* Effect.promise(async () => {
            const form = page.getByRole("form", { name: "Set a chat price" })
            const field = (label: RegExp) => form.getByLabel(label)
            const tier = (n: number) => form.getByRole("group", { name: `Tier ${n}` })
            /** Waits for the field to show `value` (preact runs the effect that fills the form after the list is painted). */
            const shows = async (label: RegExp, value: string) => {
              const input = await field(label).elementHandle()
              await page.waitForFunction(([input, value]) => (input as any).value === value, [input, value] as const)
            }
            const row = page.getByRole("row").filter({ hasText: "taskmeter-local" })

            // The operator edits the upstream before the list arrives: the list leaves the form as typed.
            let list = await holdChatPriceList(page)
            await openPage(page, "Chat prices", "Chat prices")
            await list.asked
            await field(/^Chat model/).fill("taskmeter-local")
            await field(/^Upstream/).fill("elsewhere")
            await list.answer()
            await row.waitFor()
            // The next frame, by which preact has run the effects of the render that showed the list.
            await page.evaluate(() => new Promise((done) => (globalThis as any).requestAnimationFrame(() => setTimeout(done))))
            expect(await field(/^Upstream/).inputValue()).toBe("elsewhere")
            expect(await field(/^Context length/).inputValue()).toBe("")
            expect(
              await tier(1)
                .getByLabel(/^Prompt/)
                .inputValue()
            ).toBe("")

            // Typed only the model before the list arrives: the list's entry fills the form once it does.
            await openPage(page, "Prices", "Prices")
            list = await holdChatPriceList(page)
            await openPage(page, "Chat prices", "Chat prices")
            await list.asked
            await field(/^Chat model/).fill("taskmeter-local")
            expect(await field(/^Upstream/).inputValue()).toBe("")
            await list.answer()
            await row.waitFor()
            await shows(/^Upstream/, "local")
            expect(await field(/^Context length/).inputValue()).toBe("32768")
            expect(await field(/^Tokenizer/).inputValue()).toBe("o200k_base")
            expect(
              await tier(2)
                .getByLabel(/^Completion/)
                .inputValue()
            ).toBe("0.8")
            await checkPage(page, "chat-prices-filled")
            await tier(1)
              .getByLabel(/^Up to prompt tokens/)
              .fill("1000")
            await tier(1)
              .getByLabel(/^Prompt/)
              .fill("0.2")
            await tier(1)
              .getByLabel(/^Completion/)
              .fill("0.8")
            await tier(2)
              .getByLabel(/^Up to prompt tokens/)
              .fill("")
            await tier(2)
              .getByLabel(/^Prompt/)
              .fill("0.1")
            await tier(2)
              .getByLabel(/^Completion/)
              .fill("0.4")
            await form.getByRole("button", { name: "Set chat price" }).click()
            await alertWith(page, "rates may not be lower than the previous tier's")
            await tier(2)
              .getByLabel(/^Prompt/)
              .fill("0.3")
            await tier(2)
              .getByLabel(/^Completion/)
              .fill("1.2")
            await form.getByRole("button", { name: "Set chat price" }).click()
            await statusWith(page, "Chat model taskmeter-local set")
            await row.getByText("prompt up to 1,000 tokens: $0.20 / $0.80").waitFor()
            await checkPage(page, "chat-prices")

            const listed = await chatModelOnceIt(page, "taskmeter-local", (m) => m?.pricing.tiers[0].up_to_prompt_tokens === 1000)
            expect(
              listed.pricing.tiers.map((t: any) => [
                t.up_to_prompt_tokens,
                t.prompt_micros_per_million,
                t.completion_micros_per_million
              ])
            ).toEqual([
              [1000, 200_000, 800_000],
              [null, 300_000, 1_200_000]
            ])

            await page.getByRole("button", { name: "Disable taskmeter-local" }).click()
            await statusWith(page, "Chat model taskmeter-local disabled")
            await row.getByRole("cell", { name: "disabled" }).waitFor()
            expect(await chatModelOnceIt(page, "taskmeter-local", (m) => m === undefined)).toBeUndefined()
          })

          // A held task resolved as succeeded, its result fetched by link.
          const taskId = yield* HeldTask.make(accountId, 2_000_000, "song-lyrics", "poll: the upstream answered 502")
          yield* Effect.promise(async () => {
            await openPage(page, "Reconciliation queue", "Reconciliation queue")
            const form = page.getByRole("form", { name: `Task ${taskId}` })
            await form.getByText("poll: the upstream answered 502").waitFor()
            await form.getByLabel("Succeeded: attach its results and charge").check()
            await form.getByLabel("Result 1 link").fill(LYRICS_URL)
            await form.getByLabel("Result 1 content type").fill("application/zip")
            await form.getByLabel(/^Charge/).fill("1.5")
            await form.getByLabel("Reason").fill("ticket 7: upstream support sent the lyrics")
            await form.getByRole("button", { name: "Resolve as succeeded" }).click()
            await alertWith(page, 'Result 1: the content type "application/zip" must be image/*, audio/*, video/* or text/*')
            await form.getByLabel("Result 1 content type").fill("text/plain")
            // The notice answered the form as submitted: fixing the field clears it.
            await form.getByRole("alert").waitFor({ state: "detached" })
            await checkPage(page, "reconciliation-succeeded")
            await form.getByRole("button", { name: "Resolve as succeeded" }).click()
            await statusWith(page, `Task ${taskId} resolved as succeeded with 1 result, charged $1.50.`)
            await page.getByRole("status").filter({ hasText: "No task waits for reconciliation." }).waitFor()

            const task = await apiGet(page, `/api/v1/jobs/${taskId}`)
            expect(task).toMatchObject({ status: "succeeded", errorCode: null, priceMicros: 2_000_000 })
            expect(task.assets).toHaveLength(1)
            const text = await page.evaluate(async (path) => (await (globalThis as any).fetch(path)).text(), task.assets[0].url)
            expect(text).toBe(LYRICS)
            const entries = (await apiGet(page, "/api/v1/usage")).entries.filter((e: any) => e.taskId === taskId)
            expect(entries.map((e: any) => [e.kind, e.amountMicros, e.note]).sort()).toEqual([
              ["charge", 1_500_000, "resolved by operator: ticket 7: upstream support sent the lyrics"],
              ["release", 500_000, "resolved by operator: ticket 7: upstream support sent the lyrics"],
              ["reserve", 2_000_000, null]
            ])
            expect(errors).toEqual([])
          })
        }).pipe(Effect.ensuring(Effect.promise(() => browser.close())))
      }),
    180_000
  )
})
