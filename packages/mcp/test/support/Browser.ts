/**
 * Headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core) playing the account
 * owner on the sign-in page: it opens the authorization URL, enters a credential, presses a
 * button and reports where the authorization server sent it back (the redirect URI is
 * intercepted, so no callback server is needed).
 */
import type { Browser, BrowserContext } from "playwright-core"
import * as Chromium from "../../../../test/Chromium.ts"

export interface Owner {
  /**
   * Opens `authorizationUrl`, signs in with `credential` and presses Approve (or Deny); returns
   * the URL the browser was redirected to (the client's redirect URI with code, state and iss).
   */
  readonly signIn: (
    authorizationUrl: string,
    credential: string,
    options?: { readonly deny?: boolean; readonly redirectPrefix?: string }
  ) => Promise<URL>
  readonly close: () => Promise<void>
}

export const launch = async (): Promise<Owner & { readonly browser: Browser }> => {
  const chromium = await Chromium.launch()
  const context: BrowserContext = chromium.context
  const browser = context.browser()!
  const signIn: Owner["signIn"] = async (authorizationUrl, credential, options = {}) => {
    const page = await context.newPage()
    try {
      const redirectUri = new URL(authorizationUrl).searchParams.get("redirect_uri") ?? options.redirectPrefix
      if (redirectUri === undefined) throw new Error("the authorization URL names no redirect_uri")
      const prefix = options.redirectPrefix ?? redirectUri
      let landed: URL | undefined
      await page.route(
        (url) => url.href.startsWith(prefix),
        async (route) => {
          landed = new URL(route.request().url())
          await route.fulfill({ status: 200, contentType: "text/plain", body: "signed in" })
        }
      )
      const response = await page.goto(authorizationUrl)
      if (response?.status() !== 200) throw new Error(`the sign-in page answered ${response?.status()}: ${await page.content()}`)
      await page.fill("#credential", credential)
      await page.click(options.deny === true ? "button[value=deny]" : "button[value=approve]")
      await page.waitForURL((url) => url.href.startsWith(prefix), { timeout: 10_000 })
      if (landed === undefined) throw new Error("the browser did not reach the redirect URI")
      return landed
    } finally {
      await page.close()
    }
  }
  return {
    browser,
    signIn,
    close: chromium.close
  }
}
