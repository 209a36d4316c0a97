/**
 * The console in a real browser against the composed server (simulated provider, open sign-up
 * with starting credits, mail over SMTP to an in-process server): sign up, open the mailed
 * verification link, create a key, and in the playground run an image model (quote, charge,
 * picture), an edit model on an image dropped onto its media field, a song (two audio players,
 * one played until it reports a duration), lyrics (as text), a video (seen running, then done; the player
 * seeks), a running task's page reaching succeeded by its event stream, and a
 * streamed chat (its charge shown); sign out, use the key in a tab, sign in again with the password, revoke the key,
 * sign out, reset the password from the mailed link, sign in with the new one and sign out everywhere. Every page is
 * screenshotted into test/output/journey (non-blank) and passes axe-core in light and dark, the
 * overview also at a phone's width.
 */
import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { expect, layer } from "@effect/vitest"
import type { Page } from "playwright-core"
import * as Browser from "./support/Browser.ts"
import * as ConsoleServer from "./support/ConsoleServer.ts"
import * as Inbox from "./support/Inbox.ts"

const OUTPUT = fileURLToPath(new URL("../test/output/journey/", import.meta.url))

const IMAGE_MODEL = "alpha-2-lite-text-to-image-economy"
const EDIT_MODEL = "alpha-2-lite-image-to-image-economy"
const SONG_MODEL = "song-single-v5"
const VIDEO_MODEL = "delta-omni-flash-text-to-video-economy"
const EMAIL = "ada@example.com"
const PASSWORD = "a long enough passphrase"

/** Runs a snippet of the playground with Node (the snippet is plain JavaScript as well), with the key in the environment. */
const runScript = (code: string, key: string) =>
  new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      ["--input-type=module", "-e", code],
      { env: { ...process.env, TASKMETER_API_KEY: key }, timeout: 30_000 },
      (error, stdout, stderr) => (error === null ? resolve(stdout) : reject(new Error(`${error.message}\n${stderr}`)))
    )
  )

/** Screenshots (light, dark) and axe-core on the page as it is now; both must pass. */
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

const chooseModel = async (page: Page, category: string, slug: string) => {
  await page.getByLabel("Category").selectOption(category)
  await page.locator("#model").selectOption(slug)
  await page.getByRole("form", { name: /^Run / }).waitFor()
}

/** Runs the form, waits for the task's end, and returns the result section. */
const run = async (page: Page, click = true) => {
  if (click) await page.getByRole("button", { name: "Run" }).click()
  const result = page.locator("section.result")
  await result.locator(".badge-succeeded").waitFor({ timeout: 60_000 })
  await expect.poll(() => result.locator(".charged").textContent(), { timeout: 10_000 }).toMatch(/^\$/)
  return result
}

/** A video task stays running this long, so that its status is seen to move. */
const server = ConsoleServer.layer({}, { delayMs: { video: 1500 } })

layer(server, { timeout: 60_000, excludeTestServices: true })("the console in a browser", (it) => {
  it.effect(
    "signs up, verifies, makes a key, runs image, edit, song and chat, uses and revokes the key, signs out; every page accessible",
    () =>
      Effect.gen(function* () {
        const url = yield* ConsoleServer.baseUrl
        const inbox = yield* Inbox.Inbox
        yield* Effect.promise(async () => {
          const errors: Array<string> = []
          const browser = await Browser.launch()
          try {
            const page = await browser.context.newPage()
            page.on("pageerror", (error) => errors.push(error.message))
            // A failed request is the answer being read (the session check's 401), not an error of the page.
            page.on("console", (message) => {
              if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) errors.push(message.text())
            })

            await page.goto(`${url}/`)
            await page.waitForURL(`${url}/sign-in`)
            await page.getByRole("heading", { name: "Sign in" }).waitFor()
            await checkPage(page, "sign-in")

            // Sign up, and verify the address from the mail.
            await page.getByRole("link", { name: "Create an account" }).click()
            await page.getByRole("heading", { name: "Create an account" }).waitFor()
            await checkPage(page, "sign-up")
            await page.goto(`${url}/sign-up?invitation=inv_from_the_link`)
            expect(await page.getByLabel("Invitation code (if you have one)").inputValue()).toBe("inv_from_the_link")
            await page.getByLabel("Invitation code (if you have one)").fill("")
            await page.getByLabel("Email").fill(EMAIL)
            await page.getByLabel("Password (10 characters or more)").fill(PASSWORD)
            await page.getByRole("button", { name: "Sign up" }).click()
            await page.getByText(`Check ${EMAIL}`).waitFor()
            await expect.poll(() => Inbox.linkTo(inbox.messages, EMAIL, "/verify-email"), { timeout: 10_000 }).toBeDefined()
            const verification = Inbox.linkTo(inbox.messages, EMAIL, "/verify-email")!
            expect(verification.startsWith(`${url}/verify-email?token=`)).toBe(true)
            await page.goto(verification)
            await page.getByText("Your email address is verified.").waitFor()
            await checkPage(page, "verify-email")
            await page.getByRole("link", { name: "Open the console" }).click()
            await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor()
            await expect.poll(() => page.locator(".balances dd").first().textContent()).toBe("$25.00")
            expect(await page.getByText("Verify your email address").count()).toBe(0)
            await checkPage(page, "overview-empty")
            // The skip link comes before the header's controls, and moves focus to the page's content.
            await page.mouse.click(1, 1)
            await page.keyboard.press("Shift+Tab")
            expect(await page.evaluate(() => (globalThis as any).document.activeElement?.textContent)).toBe("Skip to content")
            await page.keyboard.press("Enter")
            expect(await page.evaluate(() => (globalThis as any).document.activeElement?.id)).toBe("main")

            // A key, its secret shown once.
            await openPage(page, "API keys", "API keys")
            await page.getByLabel("Name", { exact: true }).fill("journey")
            await page.getByRole("button", { name: "Create key" }).click()
            const secret = (await page.locator("#new-secret").textContent()) ?? ""
            expect(secret).toMatch(/^tm_/)
            await page.getByRole("button", { name: "Copy key" }).click()
            expect(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(secret)
            await expect.poll(() => page.locator("tbody tr").count()).toBe(1)
            await checkPage(page, "keys")

            // An image model: the quote, the run, the charge and the picture.
            await openPage(page, "Playground", "Playground")
            await chooseModel(page, "image", IMAGE_MODEL)
            await page.getByLabel("prompt").fill("a lighthouse at dusk")
            const quote = await page.locator("#quote").textContent()
            expect(quote).toMatch(/^\$0\.\d+/)
            let result = await run(page)
            expect(await result.locator(".charged").textContent()).toBe(quote)
            await expect.poll(() => result.locator("img").evaluate((img: any) => img.complete && img.naturalWidth > 0)).toBe(true)
            await checkPage(page, "playground-image")
            // "Copy as TypeScript" is a program that makes the same request with the key.
            await page.getByText("TypeScript", { exact: true }).click()
            const program = (await page.locator("details[open] pre").textContent()) ?? ""
            expect(program).toContain(`"model": "${IMAGE_MODEL}"`)
            const ran = await runScript(program, secret)
            expect(ran).toMatch(/^task_\S+ queued\n$/u)

            // An edit model on an image dropped onto its media field.
            const png = await page.locator("section.result img").screenshot()
            await chooseModel(page, "image", EDIT_MODEL)
            const dropped = await page.evaluateHandle((base64) => {
              // Runs in the page, where DataTransfer and File are the DOM's.
              const page = globalThis as any
              const transfer = new page.DataTransfer()
              const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))
              transfer.items.add(new page.File([bytes], "photo.png", { type: "image/png" }))
              return transfer
            }, png.toString("base64"))
            const zone = page.locator('.drop[data-field="imageUrls"]')
            await zone.dispatchEvent("dragover", { dataTransfer: dropped })
            await zone.dispatchEvent("drop", { dataTransfer: dropped })
            await expect.poll(() => page.locator("#field-imageUrls").inputValue()).toMatch(/^media:[0-9a-f-]{36}$/)
            await page.getByLabel("prompt").fill("the same lighthouse in snow")
            result = await run(page)
            expect(await result.locator("img").count()).toBeGreaterThan(0)

            // A song: both songs in audio players, one played until it reports a duration.
            await chooseModel(page, "audio", SONG_MODEL)
            await page.getByLabel("description").fill("a calm song about the sea")
            result = await run(page)
            const players = result.locator("audio")
            expect(await players.count()).toBe(2)
            const duration = await players.first().evaluate(async (audio: any) => {
              audio.muted = true
              await audio.play()
              return audio.duration
            })
            expect(duration).toBeGreaterThan(0)
            await checkPage(page, "playground-song")

            // Lyrics: a text result, shown as text.
            await chooseModel(page, "text", "song-lyrics")
            await page.getByLabel("prompt").fill("the sea at night")
            result = await run(page)
            expect((await result.locator("pre.lyrics").textContent())?.length).toBeGreaterThan(20)

            // A video (every field has a default): the player loads it and seeks, by Range requests under the session.
            await chooseModel(page, "video", VIDEO_MODEL)
            await page.getByLabel("duration").selectOption("4")
            // The run is seen unfinished, then finished: the playground follows the task's event stream.
            await page.getByRole("button", { name: "Run" }).click()
            await page.locator("section.result").locator(".badge-queued, .badge-running").first().waitFor()
            result = await run(page, false)
            const seeked = await result.locator("video").evaluate(
              (video: any) =>
                new Promise<{ duration: number; at: number }>((resolve, reject) => {
                  const seek = () => {
                    video.addEventListener("seeked", () => resolve({ duration: video.duration, at: video.currentTime }), {
                      once: true
                    })
                    video.currentTime = video.duration / 2
                  }
                  video.addEventListener("error", () => reject(new Error(`the video did not load: ${video.error?.message}`)))
                  if (video.readyState >= 1) seek()
                  else video.addEventListener("loadedmetadata", seek, { once: true })
                })
            )
            expect(seeked.duration).toBeGreaterThan(0)
            expect(seeked.at).toBeCloseTo(seeked.duration / 2, 0)

            // A task's page follows it live: one read of the task, then its event stream (no polling).
            const submitted = await fetch(`${url}/api/v1/jobs`, {
              method: "POST",
              headers: {
                authorization: `Bearer ${secret}`,
                "content-type": "application/json",
                "idempotency-key": "live-detail"
              },
              body: JSON.stringify({ model: VIDEO_MODEL, input: { prompt: "waves at dusk" } })
            })
            expect(submitted.status, await submitted.clone().text()).toBe(202)
            const { id: liveId } = (await submitted.json()) as { id: string }
            const taskReads: Array<string> = []
            const onRequest = (request: { url(): string }) => {
              const path = new URL(request.url()).pathname
              if (path === `/api/v1/jobs/${liveId}` || path === `/api/v1/jobs/${liveId}/events`) taskReads.push(path)
            }
            page.on("request", onRequest)
            await page.goto(`${url}/tasks/${liveId}`)
            await page.locator(".badge-queued, .badge-running").first().waitFor()
            await page.locator(".badge-succeeded").waitFor({ timeout: 30_000 })
            await page.locator("video").waitFor()
            page.off("request", onRequest)
            expect(taskReads).toEqual([`/api/v1/jobs/${liveId}`, `/api/v1/jobs/${liveId}/events`])

            // A streamed chat and its charge.
            await openPage(page, "Chat playground", "Chat playground")
            await page.getByRole("textbox", { name: "Message" }).fill("Say hello")
            await page.getByRole("button", { name: "Send" }).click()
            await page.locator(".message.assistant .charged").waitFor({ timeout: 30_000 })
            expect(await page.locator(".message.assistant p").textContent()).not.toBe("")
            await checkPage(page, "chat-playground")

            // The other pages, with what the runs left.
            await openPage(page, "Tasks", "Tasks")
            await expect.poll(() => page.locator("tbody tr").count()).toBe(7)
            await checkPage(page, "tasks")
            await page.locator("tbody tr").nth(3).getByRole("link").click()
            await page.locator(".badge-succeeded").waitFor()
            expect(await page.locator("audio").count()).toBe(2)
            await checkPage(page, "task-song")
            await openPage(page, "Chat requests", "Chat requests")
            await page.locator("tbody tr").first().waitFor()
            await checkPage(page, "chat-requests")
            await openPage(page, "Credits", "Credits")
            // This server takes no payments: no top-up is offered.
            expect(await page.getByRole("form", { name: "Top up" }).count()).toBe(0)
            await page.locator("tbody tr").first().waitFor()
            await page.getByLabel("Kind").selectOption("charge")
            await expect.poll(() => page.locator("tbody tr").count(), { timeout: 20_000 }).toBe(8)
            const download = page.waitForEvent("download")
            await page.getByRole("button", { name: "Export CSV" }).click()
            const csvPath = join(OUTPUT, "ledger.csv")
            await (await download).saveAs(csvPath)
            const rows = readFileSync(csvPath, "utf8").split("\r\n").filter(Boolean)
            expect(rows[0]).toBe('"id","kind","amountMicros","amountUsd","taskId","chatRequestId","note","createdAt"')
            expect(rows.slice(1).every((row) => row.split(",")[1] === '"charge"')).toBe(true)
            expect(rows).toHaveLength(9)
            await checkPage(page, "credits")
            await openPage(page, "Overview", "Overview")
            await page.locator("figure.chart svg").first().waitFor()
            // Every charge of the period (GET /api/v1/usage/summary), as money: dollars and cents.
            expect(await page.locator("#spend-total").textContent()).toMatch(
              /^\$\d+\.\d{2,6} spent from \d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2} \(UTC\): \$\d+\.\d{2,6} on tasks, \$\d+\.\d{2,6} on chat\.$/
            )
            for (const amount of await page.locator(".balances dd").allTextContents()) expect(amount).toMatch(/^\$\d+\.\d{2}$/)
            expect(await page.getByRole("img", { name: new RegExp(`^Spend by model\\. .*${IMAGE_MODEL}: \\$`) }).count()).toBe(1)
            await page.getByLabel("Spend over").selectOption("7")
            await expect.poll(() => page.locator("#spend-total").textContent()).toContain("spent from")
            await checkPage(page, "overview")
            await page.setViewportSize({ width: 390, height: 844 })
            await checkPage(page, "overview-phone")
            await page.setViewportSize({ width: 1280, height: 900 })
            await openPage(page, "Connect an agent", "Connect an agent")
            expect(await page.locator("#mcp-address").textContent()).toBe(`${url}/mcp`)
            await checkPage(page, "connect")

            await page.getByRole("button", { name: "Sign out", exact: true }).click()
            await page.waitForURL(`${url}/sign-in`)
            await page.goto(`${url}/tasks`)
            await page.waitForURL(`${url}/sign-in`)

            // The key, in a tab: the tasks and a result, fetched with it.
            await page.getByText("Use an API key instead").click()
            await page.getByLabel("API key (kept for this tab only)").fill(secret)
            await page.getByRole("button", { name: "Use this key" }).click()
            await page.getByText("Signed in with an API key").waitFor()
            await openPage(page, "Tasks", "Tasks")
            await page.locator("tbody tr").last().getByRole("link").click()
            await expect
              .poll(() =>
                page
                  .locator(".asset img")
                  .first()
                  .evaluate((img: any) => img.complete && img.naturalWidth > 0)
              )
              .toBe(true)
            await page.getByRole("button", { name: "Sign out", exact: true }).click()
            await page.waitForURL(`${url}/sign-in`)

            // Back with the password; the key revoked.
            await page.getByLabel("Email").fill(EMAIL)
            await page.getByLabel("Password").fill(PASSWORD)
            await page.getByRole("button", { name: "Sign in", exact: true }).click()
            await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor()
            await openPage(page, "API keys", "API keys")
            page.once("dialog", (dialog) => void dialog.accept())
            await page.getByRole("button", { name: "Revoke journey" }).click()
            await page.getByRole("cell", { name: "Revoked" }).waitFor()
            const refused = await fetch(`${url}/api/v1/usage`, { headers: { authorization: `Bearer ${secret}` } })
            expect(refused.status).toBe(403)
            expect(((await refused.json()) as { code: string }).code).toBe("PERMISSION_DENIED")
            await page.getByRole("button", { name: "Sign out", exact: true }).click()
            await page.waitForURL(`${url}/sign-in`)
            await page.goto(`${url}/keys`)
            await page.waitForURL(`${url}/sign-in`)

            // A forgotten password, reset from the mailed link; the new one signs in.
            await page.getByRole("link", { name: "Forgot your password?" }).click()
            await page.getByRole("heading", { name: "Reset your password" }).waitFor()
            await checkPage(page, "reset-password-request")
            await page.getByLabel("Email").fill(EMAIL)
            await page.getByRole("button", { name: "Send a reset link" }).click()
            await page.getByText("a reset link is on its way").waitFor()
            await expect.poll(() => Inbox.linkTo(inbox.messages, EMAIL, "/reset-password"), { timeout: 10_000 }).toBeDefined()
            await page.goto(Inbox.linkTo(inbox.messages, EMAIL, "/reset-password")!)
            await checkPage(page, "reset-password")
            await page.getByLabel("New password (10 characters or more)").fill(`${PASSWORD} again`)
            await page.getByRole("button", { name: "Set the new password" }).click()
            await page.getByText("Your password is changed").waitFor()
            await page.getByRole("link", { name: "Back to sign in" }).click()
            await page.getByLabel("Email").fill(EMAIL)
            await page.getByLabel("Password").fill(`${PASSWORD} again`)
            await page.getByRole("button", { name: "Sign in", exact: true }).click()
            await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor()
            await page.getByRole("button", { name: "Sign out everywhere" }).click()
            await page.waitForURL(`${url}/sign-in`)
            await page.goto(`${url}/`)
            await page.waitForURL(`${url}/sign-in`)
            expect(errors).toEqual([])
          } catch (failure) {
            const shown = await Promise.all(browser.context.pages().map((open) => open.textContent("body").catch(() => "")))
            throw new Error(`${failure}\nbrowser errors: ${errors.join("\n")}\npage: ${shown.join("\n---\n")}`)
          } finally {
            await browser.close()
          }
        })
      }),
    240_000
  )
})
