/**
 * Where to write to an account's people (notices such as a disabled webhook endpoint): their
 * email addresses. Until accounts have users with addresses, the default knows none, and a
 * notice that finds no address is logged instead (the reason stays on what it was about).
 */
import { Context, Effect } from "effect"
import type { AccountId } from "../domain/Ids.ts"

export interface Contacts {
  readonly emailsOf: (accountId: AccountId) => Effect.Effect<ReadonlyArray<string>>
}

/** No addresses for anyone; a server with users provides its own. */
export const none: Contacts = { emailsOf: () => Effect.succeed([]) }

export const AccountContacts = Context.Reference<Contacts>("@taskmeter/kernel/AccountContacts", { defaultValue: () => none })
