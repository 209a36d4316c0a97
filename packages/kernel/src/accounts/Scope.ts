/**
 * API key scopes. The spec names `jobs:create` and `jobs:read`; the rest are ours:
 *
 * | scope        | grants                                                          |
 * |--------------|-----------------------------------------------------------------|
 * | jobs:create  | POST /api/v1/jobs, POST /api/v1/media (uploads feed submissions) |
 * | jobs:read    | GET /api/v1/jobs, GET /api/v1/jobs/{id}, GET /api/v1/results/{id} |
 * | usage:read   | GET /api/v1/usage, GET /api/v1/chat/requests[/{id}]              |
 * | chat:create  | POST /api/v1/chat/completions                                    |
 *
 * A key made without explicit scopes gets all of them; a read-only key is `jobs:read usage:read`.
 */
import { Schema } from "effect"

export const Scope = Schema.Literals(["jobs:create", "jobs:read", "usage:read", "chat:create"])
export type Scope = typeof Scope.Type

export const all: ReadonlyArray<Scope> = Scope.literals

export const readOnly: ReadonlyArray<Scope> = ["jobs:read", "usage:read"]

export const parse = (text: string): ReadonlyArray<Scope> | undefined => {
  const parts = text.split(/[\s,]+/).filter((part) => part.length > 0)
  return parts.every(Schema.is(Scope)) ? parts : undefined
}
