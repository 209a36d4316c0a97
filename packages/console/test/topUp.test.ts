/**
 * Buying credits in the console when the server takes payments (Stripe's settings; Stripe's API
 * mocked with msw): the Credits page offers the presets, and Top up sends the browser to the
 * hosted checkout the API made for the chosen amount. The page passes axe-core in light and dark.
 */
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { afterAll, beforeAll, expect, layer } from "@effect/vitest"
import { HttpResponse, http, passthrough } from "msw"
import { setupServer } from "msw/node"
import * as Browser from "./support/Browser.ts"
import * as ConsoleServer from "./support/ConsoleServer.ts"

const OUTPUT = fileURLToPath(new URL("../test/output/top-up/", import.meta.url))
const CHECKOUT_URL = "https://checkout.stripe.com/c/pay/cs_test_console"

const sessions: Array<URLSearchParams> = []
const stripeApi = setupServer(
  http.post("https://api.stripe.com/v1/checkout/sessions", async ({ request }) => {
    sessions.push(new URLSearchParams(await request.text()))
    return HttpResponse.json({ id: "cs_test_console", object: "checkout.session", url: CHECKOUT_URL })
  }),
  // The server under test is reached for real.
  http.all(/^http:\/\/127\.0\.0\.1:\d+\//, () => passthrough())
)
beforeAll(() => stripeApi.listen({ onUnhandledFrame: "error" }))
afterAll(() => stripeApi.close())

const stripe = {
  STRIPE_SECRET_KEY: "sk_test_console",
  STRIPE_WEBHOOK_SECRET: "whsec_console_tests_0123456789",
  TOPUP_PRESETS_USD: "10, 25"
}

layer(ConsoleServer.layer(stripe), { timeout: 60_000, excludeTestServices: true })("top-ups in the console", (it) => {
  it.effect(
    "offers the presets and sends the browser to the checkout of the amount chosen",
    () =>
      Effect.gen(function* () {
        const url = yield* ConsoleServer.baseUrl
        yield* Effect.promise(async () => {
          const browser = await Browser.launch()
          try {
            const page = await browser.context.newPage()
            await page.goto(`${url}/sign-in`)
            // Signed up by the page itself (same origin), so the session cookie is the browser's.
            const status = await page.evaluate(
              async () =>
                (
                  await (globalThis as any).fetch("/api/v1/auth/sign-up", {
                    method: "POST",
                    headers: { "content-type": "application/json" },
                    body: JSON.stringify({ email: "bea@example.com", password: "a long enough passphrase" })
                  })
                ).status
            )
            expect(status).toBe(201)
            await page.goto(`${url}/credits`)
            const form = page.getByRole("form", { name: "Top up" })
            await form.waitFor()
            expect(await form.getByLabel("Amount").locator("option").allTextContents()).toEqual(["$10.00", "$25.00"])
            for (const result of await Browser.check(page, OUTPUT, "credits-top-up")) {
              expect(result.nonBlank).toBe(true)
              expect(result.violations, result.scheme).toEqual([])
            }
            await page.route(CHECKOUT_URL, (route) =>
              route.fulfill({ contentType: "text/html", body: "<title>Checkout</title>" })
            )
            await form.getByLabel("Amount").selectOption({ label: "$25.00" })
            await form.getByRole("button", { name: "Top up" }).click()
            await page.waitForURL(CHECKOUT_URL)
            expect(sessions).toHaveLength(1)
            expect(sessions[0]!.get("line_items[0][price_data][unit_amount]")).toBe("2500")
          } finally {
            await browser.close()
          }
        })
      }),
    120_000
  )
})
