/**
 * Authentication of the chat routes, which sit beside the HttpApi and so outside its
 * middleware: the same rules as every other endpoint. The key is read as Authentication reads
 * it (PresentedCredential) and checked by the kernel's Accounts service (AUTH_REQUIRED,
 * PERMISSION_DENIED, API_KEY_RATE_LIMITED, AUTH_UNAVAILABLE) from its cache of verified keys, so
 * a chat request makes no store call for a key seen in the last seconds; then the route's scope
 * (INSUFFICIENT_SCOPE). A request without a key but with a session cookie is the session's
 * (SessionCredential: CSRF-checked, every scope).
 */
import { Effect } from "effect"
import type { HttpServerRequest } from "effect/http"
import { Accounts, Errors, RequestFacts } from "@taskmeter/kernel"
import type { Scope } from "@taskmeter/kernel"
import { keyOf, sessionCaller } from "../handlers/Authentication.ts"
import * as SessionCredential from "../handlers/SessionCredential.ts"

/** The caller of a request that needs `scope`. */
export const authenticate = Effect.fnUntraced(function* (request: HttpServerRequest.HttpServerRequest, scope: Scope.Scope) {
  if (SessionCredential.usesSession(request)) return yield* sessionCaller(request)
  const caller = yield* (yield* Accounts.Accounts).authenticateCached(yield* keyOf(request))
  yield* RequestFacts.note({ accountId: caller.accountId })
  if (!caller.scopes.includes(scope)) {
    return yield* new Errors.InsufficientScope({
      message: `This API key lacks the scope ${scope}, which ${request.method} ${request.url.split("?")[0]} needs; use a key that has it.`
    })
  }
  return caller
})
