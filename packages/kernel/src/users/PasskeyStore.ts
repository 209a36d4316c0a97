/**
 * Storage port for passkeys (WebAuthn credentials) and the one-time challenges of their
 * ceremonies. A credential is found by its id (base64url, as the authenticator names it); its
 * signature counter only moves forward. A challenge is stored as the SHA-256 hash of its value and
 * used once (`consumeChallenge`: exactly one caller wins it, before it expires). A user names
 * their passkeys and removes them (`deletePasskey`: only one of theirs).
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { UserId } from "../domain/Ids.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"

export interface Passkey {
  /** The credential id, base64url. */
  readonly credentialId: string
  readonly userId: UserId
  /** What the user calls it, 1 to PASSKEY_NAME_MAX characters. */
  readonly name: string
  /** The COSE public key. */
  readonly publicKey: Uint8Array
  readonly counter: number
  /** How the authenticator can be reached (usb, internal, hybrid, ...), as it said at registration. */
  readonly transports: ReadonlyArray<string>
  readonly createdAt: Date
  readonly lastUsedAt: Date | null
}

export const PASSKEY_NAME_MAX = 64

export type ChallengePurpose = "registration" | "authentication"

export interface PasskeyChallenge {
  /** Lower-case hex SHA-256 of the challenge (base64url) sent to the browser. */
  readonly hash: string
  readonly purpose: ChallengePurpose
  /** The signed-in user registering a passkey; null for a sign-in (the user is not known yet). */
  readonly userId: UserId | null
  readonly createdAt: Date
  readonly expiresAt: Date
}

export class PasskeyStore extends Context.Service<
  PasskeyStore,
  {
    /** False, with nothing written, when a passkey has this credential id already. */
    readonly insertPasskey: (passkey: Passkey) => Effect.Effect<boolean, StoreUnavailable>
    /** The user's passkeys, oldest first. */
    readonly listPasskeys: (userId: UserId) => Effect.Effect<ReadonlyArray<Passkey>, StoreUnavailable>
    readonly findPasskey: (credentialId: string) => Effect.Effect<Passkey | undefined, StoreUnavailable>
    /** Removes the user's passkey; false, removing nothing, when the user has none with this id. */
    readonly deletePasskey: (userId: UserId, credentialId: string) => Effect.Effect<boolean, StoreUnavailable>
    /** Records a use: the new counter (never lowered) and the time. */
    readonly recordUse: (credentialId: string, counter: number, at: Date) => Effect.Effect<void, StoreUnavailable>
    readonly insertChallenge: (challenge: PasskeyChallenge) => Effect.Effect<void, StoreUnavailable>
    /** Uses the challenge if unused, of this purpose and before its expiry; exactly one caller gets it. */
    readonly consumeChallenge: (
      hash: string,
      purpose: ChallengePurpose,
      now: Date
    ) => Effect.Effect<PasskeyChallenge | undefined, StoreUnavailable>
  }
>()("@taskmeter/kernel/PasskeyStore") {}
