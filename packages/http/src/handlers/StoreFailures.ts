/**
 * An unreachable store, as handlers report it (`toApiUnavailable`, e.g. in
 * `Effect.catchTag("StoreUnavailable", ...)`): API_UNAVAILABLE (503), logged with its cause, never a
 * 500. Authentication has its own code for it (AUTH_UNAVAILABLE), given by Accounts.
 */
import { Effect } from "effect"
import { Errors } from "@taskmeter/kernel"
import type { StoreError } from "@taskmeter/kernel"

export const toApiUnavailable = (error: StoreError.StoreUnavailable): Effect.Effect<never, Errors.ApiUnavailable> =>
  Effect.logWarning("A store is unavailable", error).pipe(
    Effect.andThen(Effect.fail(new Errors.ApiUnavailable({ message: "The API is temporarily unavailable; retry shortly." })))
  )
