/**
 * A running task's progress in the console: the composed server's simulated provider holds a video
 * task running for a few seconds, reporting progress; the task's page, following its event stream
 * under a session, shows the status with a whole percent while it runs, rising, and none once it
 * succeeded; a percent the first GET showed stays while the stream opens. The running page passes
 * axe-core in light and dark.
 */
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { expect, layer } from "@effect/vitest"
import * as Browser from "./support/Browser.ts"
import * as ConsoleServer from "./support/ConsoleServer.ts"

const OUTPUT = fileURLToPath(new URL("../test/output/progress/", import.meta.url))
const VIDEO_MODEL = "delta-omni-flash-text-to-video-economy"

layer(ConsoleServer.layer({}, { delayMs: { video: 6_000 } }), { timeout: 60_000, excludeTestServices: true })(
  "task progress in the console",
  (it) => {
    it.effect(
      "shows a running task's progress percentage from its event stream, rising, gone once it succeeded",
      () =>
        Effect.gen(function* () {
          const url = yield* ConsoleServer.baseUrl
          yield* Effect.promise(async () => {
            const browser = await Browser.launch()
            try {
              const page = await browser.context.newPage()
              await page.goto(`${url}/sign-in`)
              // Signed up and the task submitted with the page's own fetch: its cookie, Origin and CSRF token.
              const submitted = await page.evaluate(async (model) => {
                const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
                  (globalThis as any)
                    .fetch(path, {
                      method: "POST",
                      headers: { "content-type": "application/json", ...headers },
                      body: JSON.stringify(body)
                    })
                    .then(async (reply: any) => ({ status: reply.status, body: await reply.json() }))
                const signedUp = await post("/api/v1/auth/sign-up", {
                  email: "ida@example.com",
                  password: "a long enough passphrase"
                })
                return post(
                  "/api/v1/jobs",
                  { model, input: { prompt: "waves at dusk" } },
                  { "x-csrf-token": signedUp.body.csrfToken, "idempotency-key": "progress" }
                )
              }, VIDEO_MODEL)
              expect(submitted.status, JSON.stringify(submitted.body)).toBe(202)

              // Opened once the task reports progress, so the page's first GET shows a percent
              // before its event stream opens.
              await expect
                .poll(
                  () =>
                    page.evaluate(
                      async (id) => (await (await (globalThis as any).fetch(`/api/v1/jobs/${id}`)).json()).progress,
                      submitted.body.id
                    ),
                  { timeout: 20_000, interval: 100 }
                )
                .toBeTypeOf("number")
              // Every text the status shows, as the page renders it.
              await page.addInitScript(() => {
                const page = globalThis as any
                const shown: Array<string> = []
                page.statusShown = shown
                new page.MutationObserver(() => {
                  const text: string | undefined = page.document.querySelector(".facts dd")?.textContent?.trim()
                  if (text !== undefined && text !== shown.at(-1)) shown.push(text)
                }).observe(page.document, { childList: true, characterData: true, subtree: true })
              })
              await page.goto(`${url}/tasks/${submitted.body.id}`)
              const status = page.locator(".facts dd").first()
              const percentOf = async () => /^running (\d+)%$/.exec(((await status.textContent()) ?? "").trim())?.[1]
              await expect.poll(percentOf, { timeout: 20_000, interval: 100 }).toMatch(/^\d+$/)
              const first = Number(await percentOf())
              expect(first).toBeGreaterThanOrEqual(0)
              expect(first).toBeLessThanOrEqual(100)
              for (const result of await Browser.check(page, OUTPUT, "task-running")) {
                expect(result.nonBlank, result.scheme).toBe(true)
                expect(result.violations, result.scheme).toEqual([])
              }
              await expect
                .poll(async () => Number((await percentOf()) ?? -1), { timeout: 20_000, interval: 100 })
                .toBeGreaterThan(first)
              await page.locator(".badge-succeeded").waitFor({ timeout: 30_000 })
              expect(((await status.textContent()) ?? "").trim()).toBe("succeeded")
              // Once a percent is shown it only rises, and stays until the task succeeded: the status the
              // event stream opens with, already shown, takes nothing away.
              const shown: Array<string> = await page.evaluate(() => (globalThis as any).statusShown)
              const fromFirstPercent = shown.slice(shown.findIndex((text) => /^running \d+%$/.test(text)))
              const percents = fromFirstPercent
                .slice(0, fromFirstPercent.indexOf("succeeded"))
                .map((text) => /^running (\d+)%$/.exec(text)?.[1])
              expect(percents.length).toBeGreaterThan(0)
              expect(
                percents.every((percent) => percent !== undefined),
                shown.join(" | ")
              ).toBe(true)
              expect(percents.map(Number)).toEqual([...percents.map(Number)].sort((a, b) => a - b))
            } finally {
              await browser.close()
            }
          })
        }),
      90_000
    )
  }
)
