/**
 * An unreachable store, as handlers report it: API_UNAVAILABLE (503), logged with its cause,
 * never a 500. Authentication has its own code for it (AUTH_UNAVAILABLE), given by Accounts.
 *
 * @example
 * ```ts
 * runner.list(caller).pipe(Effect.catchTag("StoreUnavailable", StoreFailures.toApiUnavailable))
 * ```
 */
import { Effect } from "effect"
import { Errors } from "@taskmeter/kernel"
import type { StoreError } from "@taskmeter/kernel"

export const toApiUnavailable = (error: StoreError.StoreUnavailable): Effect.Effect<never, Errors.ApiUnavailable> =>
  Effect.logWarning("A store is unavailable", error).pipe(
    Effect.andThen(Effect.fail(new Errors.ApiUnavailable({ message: "The API is temporarily unavailable; retry shortly." })))
  )
