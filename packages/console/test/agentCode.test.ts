/**
 * The Connect an agent page in a browser against the composed server: under a session, a one-time
 * sign-in code made with a button, shown once with when it expires and copied; each press makes a
 * new code. The page passes axe-core in light and dark.
 */
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { expect, layer } from "@effect/vitest"
import * as Browser from "./support/Browser.ts"
import * as ConsoleServer from "./support/ConsoleServer.ts"

const OUTPUT = fileURLToPath(new URL("../test/output/agent-code/", import.meta.url))

layer(ConsoleServer.layer(), { timeout: 60_000, excludeTestServices: true })("connect an agent in the console", (it) => {
  it.effect(
    "makes a one-time sign-in code, shows it with its expiry and copies it; accessible",
    () =>
      Effect.gen(function* () {
        const url = yield* ConsoleServer.baseUrl
        yield* Effect.promise(async () => {
          const browser = await Browser.launch()
          try {
            const page = await browser.context.newPage()
            await page.goto(`${url}/sign-in`)
            await page.evaluate(async () => {
              await (globalThis as any).fetch("/api/v1/auth/sign-up", {
                method: "POST",
                headers: { "content-type": "application/json" },
                body: JSON.stringify({ email: "agent@example.com", password: "a long enough passphrase" })
              })
            })
            await page.goto(`${url}/connect`)
            await page.getByRole("heading", { level: 1, name: "Connect an agent" }).waitFor()
            expect(await page.locator("#agent-code-value").count()).toBe(0)

            await page.getByRole("button", { name: "Make a sign-in code" }).click()
            const shown = page.getByRole("status").filter({ hasText: "Copy this code now." })
            await shown.waitFor()
            expect(await shown.textContent()).toMatch(/expires at \d{1,2} \w{3} \d{4}, \d{2}:\d{2} UTC/)
            const code = (await page.locator("#agent-code-value").textContent()) ?? ""
            expect(code).toMatch(/^tmsi_/)
            await page.getByRole("button", { name: "Copy code" }).click()
            expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(code)

            for (const result of await Browser.check(page, OUTPUT, "connect")) {
              expect(result.nonBlank, result.scheme).toBe(true)
              expect(result.violations, result.scheme).toEqual([])
            }

            await page.getByRole("button", { name: "Make a sign-in code" }).click()
            await expect.poll(() => page.locator("#agent-code-value").textContent()).not.toBe(code)
          } finally {
            await browser.close()
          }
        })
      }),
    60_000
  )
})
