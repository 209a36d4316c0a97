/**
 * Headless Chromium (playwright-core over Debian's /usr/bin/chromium) for the console's tests,
 * with the checks every page gets: a screenshot saved into the test's output folder and checked
 * to be non-blank, and axe-core run on the page, which must
 * report no violation.
 */
import { mkdirSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import { inflateSync } from "node:zlib"
import type { BrowserContext, Page } from "playwright-core"
import * as Chromium from "../../../../test/Chromium.ts"

const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js")

export interface Session {
  readonly context: BrowserContext
  readonly close: () => Promise<void>
}

/**
 * A fresh browser profile, with axe-core loaded into every page before its own scripts (through
 * the DevTools protocol, which the page's Content-Security-Policy does not govern, so the policy
 * stays in force and a violation shows as a console error). `args` are more Chromium switches.
 */
export const launch = async (args: ReadonlyArray<string> = []): Promise<Session> => {
  const chromium = await Chromium.launch({
    viewport: { width: 1280, height: 900 },
    permissions: ["clipboard-read", "clipboard-write"],
    args: ["--autoplay-policy=no-user-gesture-required", ...args]
  })
  await chromium.context.addInitScript({ path: AXE })
  return chromium
}

/**
 * Whether a PNG shows something: more than three distinct rows of (filtered) pixel data, where
 * a blank picture has at most two (the first row, then every other row alike).
 */
export const isNonBlank = (png: Buffer): boolean => {
  const width = png.readUInt32BE(16)
  const bytesPerPixel = png[25] === 6 ? 4 : 3
  const chunks: Array<Buffer> = []
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at)
    if (png.toString("latin1", at + 4, at + 8) === "IDAT") chunks.push(png.subarray(at + 8, at + 8 + length))
    at += length + 12
  }
  const raw = inflateSync(Buffer.concat(chunks))
  const stride = 1 + width * bytesPerPixel
  const rows = new Set<string>()
  for (let at = 0; at + stride <= raw.length && rows.size <= 3; at += stride) {
    rows.add(raw.subarray(at + 1, at + stride).toString("latin1"))
  }
  return rows.size > 3
}

export interface AxeViolation {
  readonly id: string
  readonly help: string
  readonly nodes: ReadonlyArray<{ readonly target: ReadonlyArray<string> }>
}

/** axe-core's violations on the page as it is now (WCAG 2.x A and AA, and best practices). */
export const axe = async (page: Page): Promise<ReadonlyArray<AxeViolation>> => {
  // The callback runs in the page, whose globals are the DOM's.
  return page.evaluate(async () => {
    const page = globalThis as any
    const result = await page.axe.run(page.document, {
      runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] }
    })
    return result.violations.map((v: any) => ({ id: v.id, help: v.help, nodes: v.nodes.map((n: any) => ({ target: n.target })) }))
  })
}

/**
 * Screenshots the page into `folder` as `<name>-<scheme>.png` in light and dark, and returns
 * for each scheme whether the picture is non-blank and what axe-core found.
 */
export const check = async (page: Page, folder: string, name: string) => {
  mkdirSync(folder, { recursive: true })
  const results: Array<{ scheme: string; nonBlank: boolean; violations: ReadonlyArray<AxeViolation> }> = []
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme })
    const png = await page.screenshot({ path: join(folder, `${name}-${scheme}.png`), fullPage: true })
    results.push({ scheme, nonBlank: isNonBlank(png), violations: await axe(page) })
  }
  await page.emulateMedia({ colorScheme: "light" })
  return results
}
