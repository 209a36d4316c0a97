/**
 * The operator pages in a real browser against the composed server: a user's navigation has no
 * operator pages until the user is marked operator (as `taskmeter admin operator add` does); then
 * Accounts lists and searches accounts with their credits and grants credits (the balance moves),
 * Prices sets a model's daily budget, the Reconciliation queue shows its empty state, and Revenue
 * shows today's settled chat request by day and model, with its chart. Every
 * page is screenshotted into test/output/operator and passes axe-core in light and dark.
 */
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { expect, layer } from "@effect/vitest"
import type { Page } from "playwright-core"
import { AccountStore, ChatStore, Ids, LedgerStore, Money, Users } from "@taskmeter/kernel"
import * as Browser from "./support/Browser.ts"
import * as ConsoleServer from "./support/ConsoleServer.ts"

const OUTPUT = fileURLToPath(new URL("../test/output/operator/", import.meta.url))
const EMAIL = "olga@example.com"
const MODEL = "alpha-2-lite-text-to-image-economy"

/** One chat request charged 0.042 USD today, on an account of its own. */
const revenueToday = Effect.gen(function* () {
  const accountId = Ids.makeAccountId()
  const now = new Date()
  yield* (yield* AccountStore.AccountStore).createAccount({ id: accountId, name: "revenue", createdAt: now })
  yield* (yield* LedgerStore.LedgerStore).grant({ accountId, amountMicros: 1_000_000, note: null })
  const chat = yield* ChatStore.ChatStore
  const leaseId = `lease_revenue_${accountId}`
  yield* chat.lease({
    id: leaseId,
    accountId,
    needMicros: Money.micros(100_000),
    wantMicros: Money.micros(100_000),
    at: now,
    expiresAt: new Date(now.getTime() + 60_000)
  })
  yield* chat.settleLeased([
    {
      leaseId,
      id: Ids.makeChatRequestId(),
      accountId,
      apiKeyId: null,
      model: "revenue-chat",
      reservedMicros: Money.micros(100_000),
      tiers: [],
      createdAt: now,
      status: "succeeded",
      usage: { promptTokens: 10, completionTokens: 10 },
      finishReason: "stop",
      errorCode: null,
      chargeMicros: Money.micros(42_000),
      completedAt: now,
      upstream: "primary",
      upstreamCostMicros: Money.micros(20_000)
    }
  ])
  yield* chat.closeLeases([leaseId], now)
})

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

layer(ConsoleServer.layer(), { timeout: 60_000, excludeTestServices: true })("the operator pages in a browser", (it) => {
  it.effect(
    "shows the pages to operators only; grants credits, sets a budget, shows the queue; every page accessible",
    () =>
      Effect.gen(function* () {
        const url = yield* ConsoleServer.baseUrl
        const users = yield* Users.Users
        const browser = yield* Effect.promise(() => Browser.launch())
        yield* Effect.gen(function* () {
          const page = yield* Effect.promise(() => browser.context.newPage())
          // Errors after sign-in (the signed-out page's session check is a 401 by design).
          const errors: Array<string> = []
          yield* Effect.promise(async () => {
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
            await page.goto(`${url}/`)
            await page.getByRole("navigation", { name: "Console" }).waitFor()
            expect(await page.getByRole("link", { name: "Reconciliation queue" }).count()).toBe(0)
          })
          expect(yield* users.setOperator(EMAIL, true)).toBe(true)
          page.on("console", (message) => {
            if (message.type() === "error") errors.push(message.text())
          })
          yield* Effect.promise(async () => {
            await page.reload()
            await openPage(page, "Accounts", "Accounts")
            const table = page.getByRole("table", { name: "Accounts and their credits" })
            await table.getByRole("cell", { name: "$25.00" }).first().waitFor()
            await page.getByLabel("Search by name or id").fill("no such account")
            expect(await table.locator("tbody tr").count()).toBe(0)
            await page.getByLabel("Search by name or id").fill("")
            await checkPage(page, "accounts")

            const form = page.getByRole("form", { name: "Grant or refund credits" })
            await form.getByLabel("Amount (USD)").fill("5")
            await form.getByLabel("Note").fill("welcome")
            await form.getByRole("button", { name: "Record" }).click()
            await page.getByRole("status").filter({ hasText: "grant of $5.00 recorded" }).waitFor()
            await table.getByRole("cell", { name: "$30.00" }).first().waitFor()
            const ledger = await page.evaluate(async () => (await (globalThis as any).fetch("/api/v1/usage")).json())
            expect(ledger.entries.filter((e: any) => e.kind === "grant").map((e: any) => e.amountMicros)).toEqual([
              5_000_000, 25_000_000
            ])

            await openPage(page, "Prices", "Prices")
            const prices = page.getByRole("form", { name: "Set a price or budget" })
            await prices.getByLabel("Model").selectOption(MODEL)
            await prices.getByLabel("Daily budget (USD, or none)").fill("10")
            await prices.getByRole("button", { name: "Set" }).click()
            await page
              .getByRole("status")
              .filter({ hasText: `${MODEL} updated;` })
              .waitFor()
            const row = page.getByRole("row").filter({ hasText: MODEL })
            await row.getByRole("cell", { name: "$10.00" }).waitFor()
            await checkPage(page, "prices")

            await openPage(page, "Reconciliation queue", "Reconciliation queue")
            await page.getByRole("status").filter({ hasText: "No task waits for reconciliation." }).waitFor()
            await checkPage(page, "reconciliation")
          })
          yield* revenueToday
          yield* Effect.promise(async () => {
            await openPage(page, "Revenue", "Revenue")
            const row = page
              .getByRole("table", { name: "Revenue by UTC day and model" })
              .getByRole("row")
              .filter({ hasText: "revenue-chat" })
            await row.getByRole("cell", { name: "$0.042" }).waitFor()
            await row.getByRole("cell", { name: "$0.02", exact: true }).waitFor()
            expect(
              await page
                .getByRole("img", { name: /Charged by day \(UTC\), tasks and chat\. \d{4}-\d{2}-\d{2}: \$0\.04(;|$)/ })
                .count()
            ).toBe(1)
            // At a laptop's width the day stays on one line.
            await page.setViewportSize({ width: 1280, height: 900 })
            const dayLines = await row
              .getByRole("cell")
              .first()
              .evaluate((cell: any) => {
                const range = cell.ownerDocument.createRange()
                range.selectNodeContents(cell)
                return new Set([...range.getClientRects()].map((rect: { top: number }) => Math.round(rect.top))).size
              })
            expect(dayLines).toBe(1)
            await checkPage(page, "revenue")
            expect(errors).toEqual([])
          })
        }).pipe(Effect.ensuring(Effect.promise(() => browser.close())))
      }),
    180_000
  )
})
