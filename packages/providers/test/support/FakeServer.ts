/**
 * The msw server of a family's test file: it plays `fake` for the whole file, and after each
 * test drops the handlers the test added and forgets the requests the fake recorded.
 */
import { setupServer } from "msw/node"
import type { SetupServer } from "msw/node"
import { afterAll, afterEach, beforeAll } from "vitest"
import type { Recorded } from "./Recorded.ts"

export interface Fake {
  readonly handlers: Parameters<typeof setupServer>
  readonly requests: Array<Recorded>
}

export const serve = (fake: Fake): SetupServer => {
  const server = setupServer(...fake.handlers)
  beforeAll(() => server.listen({ onUnhandledFrame: "error" }))
  afterEach(() => {
    server.resetHandlers()
    fake.requests.length = 0
  })
  afterAll(() => server.close())
  return server
}
