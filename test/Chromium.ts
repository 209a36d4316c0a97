/**
 * Headless Chromium for the browser suites: Debian's chromium (CHROMIUM_PATH, see
 * Dependencies.ts) driven by playwright-core in a fresh profile, with the flags that keep it off
 * the network it cannot reach here. `close` ends the browser and removes the profile.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { chromium } from "playwright-core"
import type { BrowserContext, LaunchOptions } from "playwright-core"
import { chromiumPath } from "./Dependencies.ts"

const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync"
]

export interface Chromium {
  readonly context: BrowserContext
  readonly close: () => Promise<void>
}

/** A persistent context in a new profile; `args` are added to the usual flags. */
export const launch = async (
  options: Omit<NonNullable<Parameters<typeof chromium.launchPersistentContext>[1]>, "executablePath" | "headless" | "args"> & {
    readonly args?: LaunchOptions["args"]
  } = {}
): Promise<Chromium> => {
  const { args = [], ...rest } = options
  const profile = mkdtempSync(join(tmpdir(), "taskmeter-chromium-"))
  const context = await chromium.launchPersistentContext(profile, {
    ...rest,
    executablePath: chromiumPath,
    headless: true,
    args: [...ARGS, ...args]
  })
  return {
    context,
    close: async () => {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    }
  }
}
