/**
 * Passkeys in the console, in Chromium with a virtual authenticator (CDP WebAuthn) against the
 * composed server at http://localhost:<port> (a relying party must be a domain): signed up, a
 * passkey added under a name on the API keys page and listed, signed out, and signed in again with
 * "Sign in with a passkey" alone; then listed as used, removed, and refused at the next sign-in.
 * The pages pass axe-core in light and dark.
 */
import { createServer } from "node:net"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { expect, layer } from "@effect/vitest"
import * as Browser from "./support/Browser.ts"
import * as ConsoleServer from "./support/ConsoleServer.ts"

const OUTPUT = fileURLToPath(new URL("../test/output/passkeys/", import.meta.url))

const port = await new Promise<number>((resolve) => {
  const probe = createServer()
  probe.listen(0, "127.0.0.1", () => {
    const { port } = probe.address() as AddressInfo
    probe.close(() => resolve(port))
  })
})
const origin = `http://localhost:${port}`

layer(ConsoleServer.layer({}, {}, { port, publicUrl: origin }), { timeout: 60_000, excludeTestServices: true })(
  "passkeys in the console",
  (it) => {
    it.effect(
      "adds a named passkey, signs in with it alone, lists it as used and removes it; accessible",
      () =>
        Effect.promise(async () => {
          const browser = await Browser.launch([`--host-resolver-rules=MAP localhost 127.0.0.1`])
          try {
            const page = await browser.context.newPage()
            const cdp = await browser.context.newCDPSession(page)
            await cdp.send("WebAuthn.enable")
            const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
              options: {
                protocol: "ctap2",
                transport: "internal",
                hasResidentKey: true,
                hasUserVerification: true,
                isUserVerified: true,
                automaticPresenceSimulation: true
              }
            })
            await page.goto(`${origin}/sign-in`)
            const signedUp = await page.evaluate(async () => {
              const reply = await (globalThis as any).fetch("/api/v1/auth/sign-up", {
                method: "POST",
                headers: { "content-type": "application/json" },
                body: JSON.stringify({ email: "pia@example.com", password: "a long enough passphrase" })
              })
              return reply.status
            })
            expect(signedUp).toBe(201)

            await page.goto(`${origin}/keys`)
            await page.getByRole("heading", { level: 2, name: "Passkeys" }).waitFor()
            await page.getByText("No passkeys yet.").waitFor()
            await page.getByLabel("Passkey name (optional)").fill("Work laptop")
            await page.getByRole("button", { name: "Add a passkey" }).click()
            await page.getByText("Passkey added.").waitFor()
            expect(await page.getByLabel("Passkey name (optional)").inputValue()).toBe("")
            const listed = page.getByRole("table", { name: "Your passkeys" }).getByRole("row").filter({ hasText: "Work laptop" })
            await listed.getByRole("cell", { name: "Never" }).waitFor()
            const held = await cdp.send("WebAuthn.getCredentials", { authenticatorId })
            expect(held.credentials).toHaveLength(1)
            expect(held.credentials[0]?.isResidentCredential).toBe(true)
            for (const result of await Browser.check(page, OUTPUT, "keys")) {
              expect(result.nonBlank, result.scheme).toBe(true)
              expect(result.violations, result.scheme).toEqual([])
            }

            // Signed out, the sign-in page signs in with the passkey alone.
            await page.getByRole("button", { name: "Sign out", exact: true }).click()
            await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor()
            for (const result of await Browser.check(page, OUTPUT, "sign-in")) {
              expect(result.nonBlank, result.scheme).toBe(true)
              expect(result.violations, result.scheme).toEqual([])
            }
            await page.getByRole("button", { name: "Sign in with a passkey" }).click()
            await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor({ state: "detached" })
            const session = await page.evaluate(async () => {
              const reply = await (globalThis as any).fetch("/api/v1/auth/session")
              return { status: reply.status, body: await reply.json() }
            })
            expect(session.status).toBe(200)
            expect(session.body.user.email).toBe("pia@example.com")

            // Listed as used; removed (after a confirmation), it signs in no more.
            await page.goto(`${origin}/keys`)
            const used = page.getByRole("table", { name: "Your passkeys" }).getByRole("row").filter({ hasText: "Work laptop" })
            await used.waitFor()
            expect(await used.getByRole("cell", { name: "Never" }).count()).toBe(0)
            page.once("dialog", (dialog) => void dialog.accept())
            await used.getByRole("button", { name: "Remove passkey Work laptop" }).click()
            await page.getByText('Passkey "Work laptop" removed.').waitFor()
            await page.getByText("No passkeys yet.").waitFor()
            await page.getByRole("button", { name: "Sign out", exact: true }).click()
            await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor()
            await page.getByRole("button", { name: "Sign in with a passkey" }).click()
            await page.getByRole("alert").filter({ hasText: "AUTH_REQUIRED" }).waitFor()
            expect(await page.getByRole("heading", { level: 1, name: "Sign in" }).count()).toBe(1)
          } finally {
            await browser.close()
          }
        }),
      60_000
    )
  }
)
