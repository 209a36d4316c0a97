/**
 * Where to write to an account's people (notices such as a disabled webhook endpoint): their
 * email addresses. `fromUsers` answers the account's users' verified addresses, owners first;
 * when none is verified, every user's address (owners first). A notice that finds no address is
 * logged instead (the reason stays on what it was about).
 */
import { Context, Effect, Layer } from "effect"
import type { AccountId } from "../domain/Ids.ts"
import { UserStore } from "../users/UserStore.ts"
import type { Member } from "../users/UserStore.ts"

export interface Contacts {
  readonly emailsOf: (accountId: AccountId) => Effect.Effect<ReadonlyArray<string>>
}

/** No addresses for anyone: the default of a process that provides no users. */
export const none: Contacts = { emailsOf: () => Effect.succeed([]) }

export const AccountContacts = Context.Reference<Contacts>("@taskmeter/kernel/AccountContacts", { defaultValue: () => none })

/** The addresses to tell among `members` (in their store order): as the module header says. */
export const emailsAmong = (members: ReadonlyArray<Member>): ReadonlyArray<string> => {
  const ordered = [...members.filter((m) => m.role === "owner"), ...members.filter((m) => m.role !== "owner")]
  const verified = ordered.filter((m) => m.user.emailVerifiedAt !== null)
  return (verified.length > 0 ? verified : ordered).map((m) => m.user.email)
}

/** The account's users' addresses from the UserStore; a store that cannot answer is logged and answers none. */
export const fromUsers = Layer.effect(
  AccountContacts,
  Effect.gen(function* () {
    const users = yield* UserStore
    return {
      emailsOf: (accountId: AccountId) =>
        users.members(accountId).pipe(
          Effect.map(emailsAmong),
          Effect.catch((error) =>
            Effect.as(Effect.logWarning(`The contacts of ${accountId} could not be read`, error.message), [])
          )
        )
    } satisfies Contacts
  })
)
