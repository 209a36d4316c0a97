/**
 * The console's users: sign-up (a new account with the user as its owner, or a place in the
 * account an invitation names), sign-in with a password, email verification, password reset,
 * invitations and the operator flag. Every one-time token is 256 random bits sent in a link
 * under `publicBaseUrl` and stored hashed (UserStore). Mail goes through the Mailer port; a
 * failed send is logged, never an error of the request that caused it.
 *
 * Sign-in answers alike for an unknown email and a wrong password (AUTH_REQUIRED, after a
 * scrypt of the same cost), and refuses with RATE_LIMITED any email or client address past
 * its failures in the window (SignInThrottle, counted in the store), before the password is
 * checked. A passkey sign-in is throttled alike, per client address and per credential.
 */
import { createHash, randomBytes } from "node:crypto"
import { Clock, Context, Effect, Layer } from "effect"
import { AccountStore } from "../accounts/AccountStore.ts"
import type { Account } from "../accounts/AccountStore.ts"
import * as Errors from "../domain/Errors.ts"
import * as Ids from "../domain/Ids.ts"
import type { AccountId } from "../domain/Ids.ts"
import type { Micros } from "../domain/Money.ts"
import type { StoreUnavailable } from "../domain/StoreError.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import { Mailer } from "../mail/Mailer.ts"
import type { MailMessage } from "../mail/Mailer.ts"
import * as Passwords from "./Passwords.ts"
import { Sessions } from "./Sessions.ts"
import type { CreatedSession } from "./Sessions.ts"
import * as SignInThrottle from "./SignInThrottle.ts"
import { UserStore } from "./UserStore.ts"
import type { EmailToken, Role, TokenPurpose, UserRecord } from "./UserStore.ts"

export type SignUpPolicy = "open" | "invite"

export interface Options {
  /** Where the console is served; links in mail point under it. */
  readonly publicBaseUrl: string
  readonly signUp: SignUpPolicy
  /** Credits granted to a new account at sign-up (a ledger grant); 0 for none. */
  readonly signUpCreditsMicros: Micros
  /** Failed sign-ins per email (and per client address: ten times as many) in `throttleWindowMs`. Default 5. */
  readonly maxFailuresPerEmail?: number | undefined
  /** Default 15 minutes. */
  readonly throttleWindowMs?: number | undefined
}

export interface SignedIn {
  readonly user: UserRecord
  readonly account: Account
  readonly role: Role
  readonly session: CreatedSession
}

export interface Invitation {
  readonly email: string
  readonly link: string
  readonly expiresAt: Date
}

/** How long each kind of link works. */
const TOKEN_LIFETIME_MS: Record<TokenPurpose, number> = {
  "verify-email": 48 * 3600_000,
  "password-reset": 3600_000,
  invitation: 7 * 24 * 3600_000
}

const LINK_PATH: Record<TokenPurpose, string> = {
  "verify-email": "/verify-email?token=",
  "password-reset": "/reset-password?token=",
  invitation: "/sign-up?invitation="
}

const EMAIL_FORMAT = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
const MAX_EMAIL_LENGTH = 254

const tokenHash = (secret: string): string => createHash("sha256").update(secret).digest("hex")

const invalid = (message: string) => new Errors.InvalidRequest({ message })

/** The trimmed email, or INVALID_REQUEST. */
export const checkEmail = (email: string): Effect.Effect<string, Errors.InvalidRequest> => {
  const trimmed = email.trim()
  return EMAIL_FORMAT.test(trimmed) && trimmed.length <= MAX_EMAIL_LENGTH
    ? Effect.succeed(trimmed)
    : Effect.fail(invalid("email must be an email address such as name@example.com."))
}

const checkPassword = (password: string): Effect.Effect<void, Errors.InvalidRequest> => {
  const problem = Passwords.problem(password)
  return problem === undefined ? Effect.void : Effect.fail(invalid(problem))
}

const wrongCredentials = () =>
  new Errors.AuthRequired({ message: "The email or password is wrong; check both, or reset the password." })

const badLink = (what: string) => invalid(`This ${what} link is unknown, used or expired; ask for a new one.`)

export class Users extends Context.Service<
  Users,
  {
    readonly signUp: (request: {
      readonly email: string
      readonly password: string
      readonly invitation?: string | undefined
    }) => Effect.Effect<SignedIn, Errors.InvalidRequest | Errors.PermissionDenied | Errors.EmailTaken | StoreUnavailable>
    readonly signIn: (request: {
      readonly email: string
      readonly password: string
      readonly clientAddress: string
    }) => Effect.Effect<SignedIn, Errors.AuthRequired | Errors.RateLimited | StoreUnavailable>
    /** A new session for a user who proved who they are another way (a passkey). */
    readonly startSession: (user: UserRecord) => Effect.Effect<SignedIn, Errors.AuthRequired | StoreUnavailable>
    /**
     * Runs a passkey sign-in `attempt` unless its client address or credential is past its
     * failures (RATE_LIMITED, before the attempt), counting an AUTH_REQUIRED it ends with.
     */
    readonly throttlePasskeySignIn: <E, R>(
      request: { readonly clientAddress: string; readonly credentialId: string },
      attempt: Effect.Effect<SignedIn, E | Errors.AuthRequired, R>
    ) => Effect.Effect<SignedIn, E | Errors.AuthRequired | Errors.RateLimited | StoreUnavailable, R>
    readonly verifyEmail: (token: string) => Effect.Effect<void, Errors.InvalidRequest | StoreUnavailable>
    /** Mails a reset link if a user has this email; answers the same either way. */
    readonly requestPasswordReset: (email: string) => Effect.Effect<void, StoreUnavailable>
    /** Sets the new password and revokes every session of the user. */
    readonly confirmPasswordReset: (
      token: string,
      password: string
    ) => Effect.Effect<void, Errors.InvalidRequest | StoreUnavailable>
    /** Mails (and returns) a sign-up link for `email`, into `accountId` as `role` when given. */
    readonly invite: (request: {
      readonly email: string
      readonly accountId?: AccountId | undefined
      readonly role?: Role | undefined
    }) => Effect.Effect<Invitation, Errors.InvalidRequest | StoreUnavailable>
    /** Marks or unmarks the user with this email as an operator; false when there is no such user. */
    readonly setOperator: (email: string, operator: boolean) => Effect.Effect<boolean, StoreUnavailable>
  }
>()("@taskmeter/kernel/Users") {}

export const make = (
  options: Options
): Effect.Effect<Users["Service"], never, UserStore | AccountStore | LedgerStore | Sessions | Mailer> =>
  Effect.gen(function* () {
    const users = yield* UserStore
    const accounts = yield* AccountStore
    const ledger = yield* LedgerStore
    const sessions = yield* Sessions
    const mailer = yield* Mailer
    const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))
    const maxFailures = options.maxFailuresPerEmail ?? 5
    const windowMs = options.throttleWindowMs ?? 15 * 60_000
    const throttle = SignInThrottle.make(users, windowMs)
    const byAddress = (address: string) => ({ key: `address ${address}`, maxFailures: maxFailures * 10 })
    const refuseWhileThrottled = (limits: ReadonlyArray<SignInThrottle.Limit>, at: number) =>
      Effect.flatMap(throttle.retryAfterMs(limits, at), (wait) =>
        wait > 0
          ? Effect.fail(
              new Errors.RateLimited({
                message: "Too many failed sign-ins for this account or from this address; retry after the time in Retry-After.",
                retryAfterSeconds: Math.ceil(wait / 1000)
              })
            )
          : Effect.void
      )
    const base = options.publicBaseUrl.replace(/\/+$/, "")

    /** Sends without failing the caller: a lost mail is logged (without its link). */
    const send = (message: MailMessage) =>
      mailer
        .send(message)
        .pipe(Effect.catch((error) => Effect.logWarning(`Could not send "${message.subject}" to a user: ${error.message}`)))

    /** Stores a new token and answers its link. */
    const issue = (purpose: TokenPurpose, fields: Pick<EmailToken, "email" | "userId" | "accountId" | "role">) =>
      Effect.gen(function* () {
        const at = yield* now
        const secret = randomBytes(32).toString("base64url")
        const expiresAt = new Date(at.getTime() + TOKEN_LIFETIME_MS[purpose])
        yield* users.insertToken({ ...fields, hash: tokenHash(secret), purpose, createdAt: at, expiresAt })
        return { link: `${base}${LINK_PATH[purpose]}${encodeURIComponent(secret)}`, expiresAt }
      })

    const consume = (secret: string, purpose: TokenPurpose) =>
      Effect.flatMap(now, (at) => users.consumeToken(tokenHash(secret), purpose, at))

    const sendVerification = (user: UserRecord) =>
      Effect.flatMap(issue("verify-email", { email: user.email, userId: user.id, accountId: null, role: null }), ({ link }) =>
        send({
          to: user.email,
          subject: "Verify your email for taskmeter",
          text: `Open this link to verify your email address:\n\n${link}\n\nThe link works for 48 hours.`
        })
      )

    /** The session's account: the user's oldest membership as owner, else the oldest. */
    const startSession = (user: UserRecord) =>
      Effect.gen(function* () {
        const memberships = yield* users.memberships(user.id)
        const membership = memberships.find((m) => m.role === "owner") ?? memberships[0]
        const account = membership === undefined ? undefined : yield* accounts.getAccount(membership.accountId)
        if (membership === undefined || account === undefined) return yield* wrongCredentials()
        const session = yield* sessions.create(user.id, account.id)
        return { user, account, role: membership.role, session }
      })

    const signUp: Users["Service"]["signUp"] = (request) =>
      Effect.gen(function* () {
        const email = yield* checkEmail(request.email)
        yield* checkPassword(request.password)
        // Checked before the invitation is used, so that a refused sign-up leaves it usable.
        if ((yield* users.findByEmail(email)) !== undefined) {
          return yield* new Errors.EmailTaken({
            message: "A user with this email exists already; sign in, or reset the password."
          })
        }
        if (options.signUp === "invite" && request.invitation === undefined) {
          return yield* new Errors.PermissionDenied({
            message: "Sign-up on this server is by invitation only; ask the operator for an invitation link."
          })
        }
        const invitation = request.invitation === undefined ? undefined : yield* consume(request.invitation, "invitation")
        if (request.invitation !== undefined && invitation === undefined) return yield* badLink("invitation")
        if (invitation !== undefined && invitation.email.toLowerCase() !== email.toLowerCase()) {
          return yield* invalid("This invitation is for another email address; sign up with the invited one.")
        }
        const at = yield* now
        const passwordHash = yield* Passwords.hash(request.password)
        const joined = invitation?.accountId === null || invitation === undefined ? undefined : invitation.accountId
        const account =
          joined === undefined
            ? yield* accounts.createAccount({ id: Ids.makeAccountId(), name: email, createdAt: at })
            : yield* accounts.getAccount(joined)
        if (account === undefined) return yield* badLink("invitation")
        const role: Role = joined === undefined ? "owner" : (invitation?.role ?? "member")
        const user: UserRecord = {
          id: Ids.makeUserId(),
          email,
          emailVerifiedAt: null,
          passwordHash,
          operator: false,
          createdAt: at
        }
        const inserted = yield* users.insertUser(user, { accountId: account.id, userId: user.id, role, createdAt: at })
        if (!inserted) {
          return yield* new Errors.EmailTaken({
            message: "A user with this email exists already; sign in, or reset the password."
          })
        }
        if (joined === undefined && options.signUpCreditsMicros > 0) {
          yield* ledger.grant({ accountId: account.id, amountMicros: options.signUpCreditsMicros, note: "sign-up credits" })
        }
        yield* sendVerification(user)
        const session = yield* sessions.create(user.id, account.id)
        return { user, account, role, session }
      })

    const signIn: Users["Service"]["signIn"] = (request) =>
      Effect.gen(function* () {
        const limits = [{ key: `email ${request.email.trim().toLowerCase()}`, maxFailures }, byAddress(request.clientAddress)]
        const at = yield* Clock.currentTimeMillis
        yield* refuseWhileThrottled(limits, at)
        const user = yield* users.findByEmail(request.email.trim())
        const matches = yield* Passwords.verify(request.password, user?.passwordHash ?? null)
        if (user === undefined || !matches) {
          yield* throttle.fail(limits, at)
          return yield* wrongCredentials()
        }
        if (user.passwordHash !== null && Passwords.needsRehash(user.passwordHash)) {
          yield* users.setPasswordHash(user.id, yield* Passwords.hash(request.password))
        }
        return yield* startSession(user)
      })

    const throttlePasskeySignIn: Users["Service"]["throttlePasskeySignIn"] = (request, attempt) =>
      Effect.gen(function* () {
        const limits = [{ key: `passkey ${request.credentialId}`, maxFailures }, byAddress(request.clientAddress)]
        const at = yield* Clock.currentTimeMillis
        yield* refuseWhileThrottled(limits, at)
        return yield* attempt.pipe(
          Effect.tapError((error) => (error instanceof Errors.AuthRequired ? throttle.fail(limits, at) : Effect.void))
        )
      })

    return Users.of({
      signUp,
      signIn,
      startSession,
      throttlePasskeySignIn,
      verifyEmail: (token) =>
        Effect.gen(function* () {
          const used = yield* consume(token, "verify-email")
          if (used === undefined || used.userId === null) return yield* badLink("verification")
          yield* users.markVerified(used.userId, yield* now)
        }),
      requestPasswordReset: (email) =>
        Effect.gen(function* () {
          const user = yield* users.findByEmail(email.trim())
          if (user === undefined) return
          const { link } = yield* issue("password-reset", {
            email: user.email,
            userId: user.id,
            accountId: null,
            role: null
          })
          // Sent in the background, so the answer takes as long whether or not the user exists.
          yield* Effect.forkDetach(
            send({
              to: user.email,
              subject: "Reset your taskmeter password",
              text:
                `Someone asked to reset the password of this address. To choose a new password, open:\n\n${link}\n\n` +
                "The link works for one hour. If it was not you, ignore this message."
            })
          )
        }),
      confirmPasswordReset: (token, password) =>
        Effect.gen(function* () {
          yield* checkPassword(password)
          const used = yield* consume(token, "password-reset")
          if (used === undefined || used.userId === null) return yield* badLink("password reset")
          yield* users.setPasswordHash(used.userId, yield* Passwords.hash(password))
          // Whoever could open the mail proved the address.
          yield* users.markVerified(used.userId, yield* now)
          yield* sessions.revokeAll(used.userId)
        }),
      invite: (request) =>
        Effect.gen(function* () {
          const email = yield* checkEmail(request.email)
          const { link, expiresAt } = yield* issue("invitation", {
            email,
            userId: null,
            accountId: request.accountId ?? null,
            role: request.accountId === undefined ? null : (request.role ?? "member")
          })
          yield* send({
            to: email,
            subject: "You are invited to taskmeter",
            text: `You are invited to sign up. Open this link to choose a password:\n\n${link}\n\nThe link works for 7 days.`
          })
          return { email, link, expiresAt }
        }),
      setOperator: (email, operator) =>
        Effect.flatMap(users.findByEmail(email.trim()), (user) =>
          user === undefined ? Effect.succeed(false) : users.setOperator(user.id, operator)
        )
    })
  })

export const layer = (options: Options): Layer.Layer<Users, never, UserStore | AccountStore | LedgerStore | Sessions | Mailer> =>
  Layer.effect(Users, make(options))
