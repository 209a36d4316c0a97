/**
 * The Webhooks page in a browser against the composed server: a refused URL's message, an
 * endpoint added (its secret shown once and copied; task.running and the payment events offered
 * unchecked, one payment event chosen), its events changed (task.running added), disabled and
 * enabled, its secret rotated (a new one shown once), a task run by the page's session making a
 * delivery that the endpoint's log shows with its attempt (the composed server's address policy
 * resolves the host first: offline, "no answer" and why), resent; the task's own page showing the
 * same delivery in its log, resent from there; and the endpoint deleted. Both pages pass axe-core
 * in light and dark.
 */
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { expect, layer } from "@effect/vitest"
import * as Browser from "./support/Browser.ts"
import * as ConsoleServer from "./support/ConsoleServer.ts"

const OUTPUT = fileURLToPath(new URL("../test/output/webhooks/", import.meta.url))
const HOOK = "https://hooks.example.com/taskmeter"

layer(ConsoleServer.layer(), { timeout: 60_000, excludeTestServices: true })("webhooks in the console", (it) => {
  it.effect(
    "adds, disables, rotates, shows deliveries, resends and deletes an endpoint; accessible",
    () =>
      Effect.gen(function* () {
        const url = yield* ConsoleServer.baseUrl
        yield* Effect.promise(async () => {
          const browser = await Browser.launch()
          try {
            const page = await browser.context.newPage()
            page.on("dialog", (dialog) => void dialog.accept())
            await page.goto(`${url}/sign-in`)
            const csrf = await page.evaluate(async () => {
              const reply = await (globalThis as any).fetch("/api/v1/auth/sign-up", {
                method: "POST",
                headers: { "content-type": "application/json" },
                body: JSON.stringify({ email: "cy@example.com", password: "a long enough passphrase" })
              })
              return ((await reply.json()) as { csrfToken: string }).csrfToken
            })
            await page.goto(`${url}/webhooks`)
            await page.getByRole("heading", { level: 1, name: "Webhooks" }).waitFor()
            await page.getByText("No endpoints yet.").waitFor()

            // A local address is refused with the API's message; nothing is added.
            const form = page.getByRole("form", { name: "Add an endpoint" })
            await form.getByLabel("URL (public https)").fill("https://localhost/hook")
            await form.getByRole("button", { name: "Add endpoint" }).click()
            await form.getByRole("alert").waitFor()
            expect(await form.getByRole("alert").textContent()).toMatch(/public https URL/)
            expect(await page.locator("tbody tr").count()).toBe(0)

            // Added: the secret shown once, copied.
            await form.getByLabel("URL (public https)").fill(HOOK)
            await form.getByLabel("task.failed").uncheck()
            expect(await form.getByLabel("task.running").isChecked()).toBe(false)
            expect(await form.getByLabel("payment.refunded").isChecked()).toBe(false)
            await form.getByLabel("payment.succeeded").check()
            await form.getByRole("button", { name: "Add endpoint" }).click()
            const secret = (await page.locator("#new-webhook-secret").textContent()) ?? ""
            expect(secret).toMatch(/^whsec_/)
            await page.getByRole("button", { name: "Copy secret" }).click()
            expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(secret)
            const row = page.locator("tbody tr").filter({ hasText: HOOK })
            await row.waitFor()
            expect(await row.textContent()).toContain("task.succeeded, task.reconciliation_required, payment.succeeded")

            // Its events changed: task.running added.
            await row.getByRole("button", { name: `Events of ${HOOK}` }).click()
            const events = page.getByRole("form", { name: `Events delivered to ${HOOK}` })
            expect(await events.getByLabel("payment.succeeded").isChecked()).toBe(true)
            expect(await events.getByLabel("task.failed").isChecked()).toBe(false)
            await events.getByLabel("task.running").check()
            await events.getByRole("button", { name: "Save events" }).click()
            await row.getByText("task.running").waitFor()
            expect(await row.textContent()).toContain(
              "task.succeeded, task.reconciliation_required, task.running, payment.succeeded"
            )

            await row.getByRole("button", { name: `Disable ${HOOK}` }).click()
            await row.getByText("Disabled").waitFor()
            await row.getByRole("button", { name: `Enable ${HOOK}` }).click()
            await row.getByText("Enabled").waitFor()

            await row.getByRole("button", { name: `Rotate secret of ${HOOK}` }).click()
            const rotated = (await page.locator("#rotated-webhook-secret").textContent()) ?? ""
            expect(rotated).toMatch(/^whsec_/)
            expect(rotated).not.toBe(secret)

            // A task of this account succeeds: its delivery shows in the log with its attempt.
            const submitted = await page.evaluate(async (token: string) => {
              const reply = await (globalThis as any).fetch("/api/v1/jobs", {
                method: "POST",
                headers: { "content-type": "application/json", "x-csrf-token": token, "idempotency-key": "hook-1" },
                body: JSON.stringify({ model: "alpha-2-lite-text-to-image-economy", input: { prompt: "a kite" } })
              })
              return { status: reply.status, id: ((await reply.json()) as { id: string }).id }
            }, csrf)
            expect(submitted.status).toBe(202)
            await row.getByRole("button", { name: `Deliveries to ${HOOK}` }).click()
            const log = page.getByRole("region", { name: `Deliveries to ${HOOK}` })
            await expect
              .poll(
                async () => {
                  await log.getByRole("button", { name: "Refresh" }).click()
                  return log.locator("ol.attempts li").count()
                },
                { timeout: 30_000, interval: 1000 }
              )
              .toBeGreaterThan(0)
            expect(await log.locator("ol.attempts li").first().textContent()).toMatch(/^(HTTP \d{3}|no answer), \d+ ms/)
            for (const result of await Browser.check(page, OUTPUT, "webhooks")) {
              expect(result.nonBlank, result.scheme).toBe(true)
              expect(result.violations, result.scheme).toEqual([])
            }
            await log
              .getByRole("button", { name: /^Resend / })
              .first()
              .click()
            await log.getByText(/queued again/).waitFor()

            // The task's page shows its deliveries too (task.running and task.succeeded to this endpoint), resent from there.
            await page.goto(`${url}/tasks/${submitted.id}`)
            const taskLog = page.getByRole("region", { name: "Webhook deliveries" })
            await expect
              .poll(
                async () => {
                  await taskLog.getByRole("button", { name: "Refresh" }).click()
                  return taskLog.locator("tbody tr").count()
                },
                { timeout: 30_000, interval: 1000 }
              )
              .toBeGreaterThan(0)
            expect(await taskLog.locator("tbody").textContent()).toContain("task.succeeded")
            expect(await taskLog.locator("tbody").textContent()).toContain(HOOK)
            for (const result of await Browser.check(page, OUTPUT, "task-deliveries")) {
              expect(result.nonBlank, result.scheme).toBe(true)
              expect(result.violations, result.scheme).toEqual([])
            }
            await taskLog
              .getByRole("button", { name: /^Resend / })
              .first()
              .click()
            await taskLog.getByText(/queued again/).waitFor()
            await page.goto(`${url}/webhooks`)

            await row.getByRole("button", { name: `Delete ${HOOK}` }).click()
            await page.getByText("No endpoints yet.").waitFor()
          } finally {
            await browser.close()
          }
        })
      }),
    120_000
  )
})
