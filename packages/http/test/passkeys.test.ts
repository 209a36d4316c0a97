/**
 * Passkeys in a real browser: Chromium (playwright-core) with a virtual authenticator (CDP
 * WebAuthn.addVirtualAuthenticator) on a page of the server's origin signs up, registers a
 * passkey, signs out and signs in with the passkey alone; a replayed assertion is refused. The
 * user lists the passkey (its name, last use) and removes it (with the CSRF token; another user
 * cannot): it no longer signs in.
 */
import { createServer } from "node:net"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { BrowserContext, Page } from "playwright-core"
import * as Chromium from "../../../test/Chromium.ts"
import * as C from "./support/Console.ts"
import { stores } from "./support/stores.ts"
import * as T from "./support/TestServer.ts"

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer()
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })

/** A port per store, probed together so that they differ. */
const ports = await Promise.all(stores.map(freePort))

/** WebAuthn needs a secure context and a domain as the relying party: localhost (mapped to 127.0.0.1). */
const originOf = (port: number) => `http://localhost:${port}`

let chromium: Chromium.Chromium
let context: BrowserContext

beforeAll(async () => {
  chromium = await Chromium.launch({ args: ["--host-resolver-rules=MAP localhost 127.0.0.1"] })
  context = chromium.context
}, 120_000)

afterAll(async () => {
  await chromium?.close()
})

/** A page of the server's origin with a virtual platform authenticator that holds resident keys. */
const pageWithAuthenticator = async (origin: string): Promise<Page> => {
  const page = await context.newPage()
  const cdp = await context.newCDPSession(page)
  await cdp.send("WebAuthn.enable")
  await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true
    }
  })
  await page.goto(`${origin}/healthz`)
  return page
}

interface Journey {
  readonly signedUp: { status: number; body: any }
  readonly registered: { status: number; body: any }
  readonly signedOut: number
  readonly afterSignOut: number
  readonly signedIn: { status: number; body: any }
  readonly session: { status: number; body: any }
  readonly replayed: { status: number; body: any }
}

interface Removal {
  readonly listed: { status: number; body: any }
  readonly withoutCsrf: { status: number; body: any }
  readonly removed: { status: number; body: any }
  readonly again: { status: number; body: any }
  readonly listedAfter: { status: number; body: any }
  readonly signIn: { status: number; body: any }
  readonly badName: { status: number; body: any }
}

/** Under the page's session (its CSRF token `csrf`): lists, removes the passkey `id`, and tries it again. */
const removal = (page: Page, id: string, csrf: string): Promise<Removal> =>
  page.evaluate(
    async ({ id, csrf }) => {
      const { credentials } = navigator as any
      const { PublicKeyCredential } = globalThis as any
      const send = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
        const response = await fetch(path, {
          method,
          headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        })
        const text = await response.text()
        return { status: response.status, body: text === "" ? null : JSON.parse(text) }
      }
      const token = { "x-csrf-token": csrf }
      const badName = await send("POST", "/api/v1/auth/passkeys", token, { response: {}, name: "tab\there" })
      const listed = await send("GET", "/api/v1/auth/passkeys", {})
      const path = `/api/v1/auth/passkeys/${encodeURIComponent(id)}`
      const withoutCsrf = await send("DELETE", path, {})
      const removed = await send("DELETE", path, token)
      const again = await send("DELETE", path, token)
      const listedAfter = await send("GET", "/api/v1/auth/passkeys", {})
      const request = await send("POST", "/api/v1/auth/passkeys/authentication-options", {})
      const assertion = await credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(request.body) })
      const signIn = await send("POST", "/api/v1/auth/passkeys/sign-in", {}, { response: assertion.toJSON() })
      return { listed, withoutCsrf, removed, again, listedAfter, signIn, badName }
    },
    { id, csrf }
  )

/** The console's passkey journey, run in the page with the page's own fetch (its cookie, its Origin). */
const journey = (page: Page, email: string, password: string): Promise<Journey> =>
  page.evaluate(
    async ({ email, password }) => {
      // The page's WebAuthn API (this package is type-checked without the DOM library).
      const { credentials } = navigator as any
      const { PublicKeyCredential } = globalThis as any
      let csrf = ""
      const send = async (method: string, path: string, body?: unknown) => {
        const response = await fetch(path, {
          method,
          headers: { "x-csrf-token": csrf, ...(body === undefined ? {} : { "content-type": "application/json" }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        })
        const text = await response.text()
        return { status: response.status, body: text === "" ? null : JSON.parse(text) }
      }
      const signedUp = await send("POST", "/api/v1/auth/sign-up", { email, password })
      csrf = signedUp.body.csrfToken
      const creation = await send("POST", "/api/v1/auth/passkeys/registration-options")
      const created = await credentials.create({
        publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(creation.body)
      })
      const registered = await send("POST", "/api/v1/auth/passkeys", { response: created.toJSON(), name: " Work laptop " })
      const signedOut = (await send("POST", "/api/v1/auth/sign-out")).status
      const afterSignOut = (await send("GET", "/api/v1/auth/session")).status
      csrf = ""
      const request = await send("POST", "/api/v1/auth/passkeys/authentication-options")
      const assertion = await credentials.get({
        publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(request.body)
      })
      const signedIn = await send("POST", "/api/v1/auth/passkeys/sign-in", { response: assertion.toJSON() })
      const session = await send("GET", "/api/v1/auth/session")
      const replayed = await send("POST", "/api/v1/auth/passkeys/sign-in", { response: assertion.toJSON() })
      return { signedUp, registered, signedOut, afterSignOut, signedIn, session, replayed }
    },
    { email, password }
  )

for (const [index, store] of stores.entries()) {
  const port = ports[index]!
  const origin = originOf(port)
  layer(T.layer(store, { port, consoleAuth: { publicBaseUrl: origin } }), { excludeTestServices: true })(
    `passkeys in Chromium over ${store.name}`,
    (it) => {
      it.effect(
        "registers a named passkey, signs in with it alone (once per assertion), lists it and removes it (not another user): then it no longer signs in",
        () =>
          Effect.gen(function* () {
            const page = yield* Effect.promise(() => pageWithAuthenticator(origin))
            const email = C.uniqueEmail("passkey")
            const result = yield* Effect.promise(() => journey(page, email, C.PASSWORD))
            const id: string = result.registered.body.id
            // Another user cannot remove it, nor see it.
            const joined = yield* C.post("/api/v1/auth/sign-up", { email: C.uniqueEmail(), password: C.PASSWORD }, { origin })
            const stranger: C.SignedIn = {
              cookie: C.sessionSetCookie(joined.headers)!.split(";")[0]!,
              setCookie: C.sessionSetCookie(joined.headers)!,
              csrfToken: joined.body.csrfToken,
              accountId: joined.body.account.id,
              userId: joined.body.user.id
            }
            const foreign = yield* C.under(stranger, `/api/v1/auth/passkeys/${id}`, { method: "DELETE", origin })
            expect([foreign.status, foreign.body.code]).toEqual([404, "REQUEST_NOT_FOUND"])
            expect((yield* C.under(stranger, "/api/v1/auth/passkeys", { origin })).body).toEqual({ data: [] })
            const removed = yield* Effect.promise(() => removal(page, id, result.signedIn.body.csrfToken))
            yield* Effect.promise(() => page.close())
            expect(result.signedUp.status).toBe(201)
            expect(result.registered.status, JSON.stringify(result.registered.body)).toBe(201)
            expect(result.registered.body.id).toMatch(/^[A-Za-z0-9_-]+$/)
            expect([result.signedOut, result.afterSignOut]).toEqual([204, 401])
            expect(result.signedIn.status, JSON.stringify(result.signedIn.body)).toBe(200)
            expect(result.signedIn.body.user.email).toBe(email)
            expect(result.session.status).toBe(200)
            expect(result.session.body.user.id).toBe(result.signedUp.body.user.id)
            expect([result.replayed.status, result.replayed.body.code]).toEqual([401, "AUTH_REQUIRED"])
            expect(result.registered.body).toEqual({ id, name: "Work laptop", createdAt: expect.any(String), lastUsedAt: null })
            expect([removed.badName.status, removed.badName.body.code]).toEqual([400, "INVALID_REQUEST"])
            expect(removed.badName.body.error).toContain("control characters")
            expect(removed.listed.status).toBe(200)
            expect(removed.listed.body.data).toEqual([
              { id, name: "Work laptop", createdAt: result.registered.body.createdAt, lastUsedAt: expect.any(String) }
            ])
            expect(Date.parse(removed.listed.body.data[0].lastUsedAt)).toBeGreaterThanOrEqual(
              Date.parse(result.registered.body.createdAt)
            )
            expect([removed.withoutCsrf.status, removed.withoutCsrf.body.code]).toEqual([403, "CSRF_REJECTED"])
            expect(removed.removed.status).toBe(204)
            expect([removed.again.status, removed.again.body.code]).toEqual([404, "REQUEST_NOT_FOUND"])
            expect(removed.listedAfter.body).toEqual({ data: [] })
            expect([removed.signIn.status, removed.signIn.body.code]).toEqual([401, "AUTH_REQUIRED"])
          }),
        120_000
      )

      it.effect("refuses passkey sign-in options and sign-in from another Origin", () =>
        Effect.gen(function* () {
          const options = yield* C.post("/api/v1/auth/passkeys/sign-in", { response: {} }, { origin: "https://evil.example" })
          expect([options.status, options.body.code]).toEqual([403, "CSRF_REJECTED"])
          const forged = yield* C.post(
            "/api/v1/auth/passkeys/sign-in",
            { response: { id: "AAAA", response: { clientDataJSON: "e30" } } },
            { origin }
          )
          expect([forged.status, forged.body.code]).toEqual([401, "AUTH_REQUIRED"])
        })
      )
    }
  )
}
