/**
 * API key scopes: `jobs:create` (submit, upload) and `jobs:read` (jobs, results), named by the spec,
 * and ours, `usage:read` (usage, chat request history), `chat:create` (chat completions),
 * `billing:create` (top-up checkouts) and `webhooks:manage` (webhook endpoints, their deliveries
 * and the signing secret). A key made without explicit scopes gets all of them; a
 * read-only key is `jobs:read usage:read`.
 */
import { Schema } from "effect"

export const Scope = Schema.Literals([
  "jobs:create",
  "jobs:read",
  "usage:read",
  "chat:create",
  "billing:create",
  "webhooks:manage"
])
export type Scope = typeof Scope.Type

export const all: ReadonlyArray<Scope> = Scope.literals

export const readOnly: ReadonlyArray<Scope> = ["jobs:read", "usage:read"]

export const parse = (text: string): ReadonlyArray<Scope> | undefined => {
  const parts = text.split(/[\s,]+/).filter((part) => part.length > 0)
  return parts.every(Schema.is(Scope)) ? parts : undefined
}
