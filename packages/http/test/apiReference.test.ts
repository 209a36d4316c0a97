/**
 * The API reference page at GET /docs in headless Chromium (playwright-core, Debian's chromium):
 * Scalar renders the served OpenAPI document's operations with nothing requested from another
 * origin and no Content-Security-Policy violation; a screenshot goes to test/output/.
 */
import { mkdirSync, rmSync, statSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Chromium from "../../../test/Chromium.ts"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const OUTPUT = join(import.meta.dirname, "output")

/** What the page did: the requests that left the server's origin (all refused) and the browser's complaints. */
interface Visit {
  readonly foreign: ReadonlyArray<string>
  readonly problems: ReadonlyArray<string>
  readonly operations: ReadonlyArray<string>
  readonly internal: number
  /** Where the page's links lead off this origin. */
  readonly links: ReadonlyArray<string>
}

const visit = (base: string, screenshot: string): Promise<Visit> =>
  (async () => {
    const { context, close } = await Chromium.launch({ viewport: { width: 1280, height: 900 } })
    try {
      const foreign: Array<string> = []
      const problems: Array<string> = []
      await context.route("**/*", (route) => {
        const url = route.request().url()
        if (url.startsWith(`${base}/`)) return route.continue()
        foreign.push(url)
        return route.abort()
      })
      const page = await context.newPage()
      page.on("console", (message) => {
        if (message.type() === "error") problems.push(message.text())
      })
      page.on("pageerror", (error) => problems.push(error.message))
      const response = await page.goto(`${base}/docs`)
      if (response?.status() !== 200) throw new Error(`GET /docs answered ${response?.status()}`)
      const operations = ["Submit a task", "Poll a task", "Download a result file"]
      for (const title of operations) await page.getByText(title, { exact: true }).first().waitFor({ timeout: 30_000 })
      // An operation's section: its parameters and the per-model request bodies.
      await page.getByText("Submit a task", { exact: true }).first().click()
      await page.getByText("idempotency-key", { exact: true }).first().waitFor({ timeout: 30_000 })
      await page.getByText("Alpha Pro text to image (economy)").first().waitFor({ timeout: 30_000 })
      const internal =
        (await page.getByText("Fetch an upload through a signed link (upstream providers only)").count()) +
        (await page.getByText("media-links", { exact: true }).count()) +
        (await page.getByText("providerCallbacks", { exact: true }).count())
      const hrefs = await page.locator("a[href]").evaluateAll((anchors) => anchors.map((anchor) => anchor.getAttribute("href")))
      const links = hrefs.map((href) => new URL(href ?? "", `${base}/docs`).href).filter((href) => !href.startsWith(`${base}/`))
      mkdirSync(OUTPUT, { recursive: true })
      await page.screenshot({ path: screenshot, fullPage: false })
      // The in-page client sends its request to this server, not through a proxy.
      await page.getByRole("button", { name: "Test Request" }).first().click()
      const sent = page.waitForResponse((answer) => answer.url().startsWith(`${base}/api/v1/`), { timeout: 30_000 })
      await page
        .getByRole("button", { name: /^Send Request/ })
        .first()
        .click()
      const answer = await sent
      if (answer.status() !== 200 && answer.status() !== 401) throw new Error(`the test request was answered ${answer.status()}`)
      return { foreign, problems, operations, internal, links }
    } finally {
      await close()
    }
  })()

layer(T.layer(stores[0]!), { excludeTestServices: true })("GET /docs", (it) => {
  describe("the API reference page", () => {
    it.effect(
      "renders the document's operations in Chromium with nothing fetched from elsewhere",
      () =>
        Effect.gen(function* () {
          const base = yield* T.baseUrl
          const screenshot = join(OUTPUT, "api-reference.png")
          rmSync(screenshot, { force: true })
          const seen = yield* Effect.promise(() => visit(base, screenshot))
          expect(seen.foreign).toEqual([])
          expect(seen.problems).toEqual([])
          expect(seen.internal).toBe(0)
          // Only the credit; not Scalar's hosted client, which would be handed the document's URL.
          expect(seen.links).toEqual(["https://www.scalar.com/"])
          expect(statSync(screenshot).size).toBeGreaterThan(10_000)
        }),
      90_000
    )

    it.effect("is served with a policy that keeps it on its own origin, the bundle gzipped and cached for good", () =>
      Effect.gen(function* () {
        const page = yield* T.call("/docs")
        expect(page.status).toBe(200)
        expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
        const policy = page.headers.get("content-security-policy") ?? ""
        expect(policy).toContain("default-src 'none'")
        expect(policy).toContain("connect-src 'self'")
        expect(policy).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/]+=*'/)
        expect(page.text).not.toMatch(/https?:\/\//)
        const bundle = /<script src="(\/docs\/scalar-[0-9.]+\.js)">/.exec(page.text)?.[1]
        expect(bundle).toBeDefined()
        const script = yield* T.call(bundle!, { headers: { "accept-encoding": "gzip" } })
        expect(script.status).toBe(200)
        expect(script.headers.get("content-encoding")).toBe("gzip")
        expect(script.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
        expect(script.text).toContain("createApiReference")
        expect((yield* T.call("/docs/anything-else")).status).toBe(404)
      })
    )
  })
})
