/**
 * The console's users and sessions: sign-up, sign-in, sign-out (here or everywhere), the current
 * session, email verification and password reset. Sign-up and sign-in set the session cookie and
 * need an Origin header naming this server; the answers are the spec's error bodies.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Errors } from "@taskmeter/kernel"
import { SessionAuth } from "./SessionSecurity.ts"

export const SessionUser = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  emailVerified: Schema.Boolean,
  role: Schema.Literals(["owner", "member"]).annotate({ description: "The user's role in the session's account." }),
  operator: Schema.Boolean.annotate({ description: "Marked by the operator: may use the operator pages." })
}).annotate({ identifier: "SessionUser" })
export type SessionUser = typeof SessionUser.Type

export const SessionAccount = Schema.Struct({ id: Schema.String }).annotate({ identifier: "SessionAccount" })

export const Session = Schema.Struct({
  user: SessionUser,
  account: SessionAccount,
  csrfToken: Schema.String.annotate({
    description: "Send as `X-CSRF-Token` on every POST, PUT, PATCH and DELETE under this session."
  })
}).annotate({ identifier: "Session" })
export type Session = typeof Session.Type

const Email = Schema.String.annotate({ description: "An email address; compared without regard to case." })
const Password = Schema.String.annotate({ description: "10 to 256 characters." })
const Token = Schema.String.annotate({ description: "The token from the link in the mail." })

export const SignUpRequest = Schema.Struct({
  email: Email,
  password: Password,
  invitation: Schema.optionalKey(
    Schema.String.annotate({ description: "The invitation from an invitation link (needed when sign-up is by invitation)." })
  )
}).annotate({ identifier: "SignUpRequest" })

export const SignInRequest = Schema.Struct({ email: Email, password: Schema.String }).annotate({ identifier: "SignInRequest" })

const sessionErrors = [Errors.InvalidRequest, Errors.CsrfRejected, Errors.ApiUnavailable]

export const AuthApi = HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.post("signUp", "/api/v1/auth/sign-up", {
      payload: SignUpRequest,
      success: Session.pipe(HttpApiSchema.status(201)),
      error: [...sessionErrors, Errors.PermissionDenied, Errors.EmailTaken]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Sign up",
        description:
          "Makes a user and an account it owns (or, with an invitation into an account, a member of that account), " +
          "signs in (the session cookie) and mails a verification link. Under `SIGNUP=invite` an invitation is needed " +
          "(PERMISSION_DENIED without). An email that has a user is EMAIL_TAKEN."
      })
    ),
    HttpApiEndpoint.post("signIn", "/api/v1/auth/sign-in", {
      payload: SignInRequest,
      success: Session,
      error: [...sessionErrors, Errors.AuthRequired, Errors.RateLimited]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Sign in",
        description:
          "Starts a new session (the session cookie). A wrong email or password is AUTH_REQUIRED, alike; too many failures " +
          "for the email or from the address are RATE_LIMITED with Retry-After."
      })
    ),
    HttpApiEndpoint.get("session", "/api/v1/auth/session", {
      success: Session,
      error: [Errors.ApiUnavailable]
    })
      .annotateMerge(OpenApi.annotations({ summary: "The current session", description: "AUTH_REQUIRED when not signed in." }))
      .middleware(SessionAuth),
    HttpApiEndpoint.post("signOut", "/api/v1/auth/sign-out", {
      success: HttpApiSchema.NoContent,
      error: [Errors.ApiUnavailable]
    })
      .annotateMerge(OpenApi.annotations({ summary: "Sign out", description: "Ends this session and clears the cookie." }))
      .middleware(SessionAuth),
    HttpApiEndpoint.post("signOutEverywhere", "/api/v1/auth/sign-out-everywhere", {
      success: HttpApiSchema.NoContent,
      error: [Errors.ApiUnavailable]
    })
      .annotateMerge(
        OpenApi.annotations({ summary: "Sign out everywhere", description: "Ends every session of the user, this one included." })
      )
      .middleware(SessionAuth),
    HttpApiEndpoint.post("verifyEmail", "/api/v1/auth/verify-email", {
      payload: Schema.Struct({ token: Token }),
      success: HttpApiSchema.NoContent,
      error: [Errors.InvalidRequest, Errors.ApiUnavailable]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Verify an email address",
        description: "With the token of the verification link; an unknown, used or expired one is INVALID_REQUEST."
      })
    ),
    HttpApiEndpoint.post("requestPasswordReset", "/api/v1/auth/password-reset", {
      payload: Schema.Struct({ email: Email }),
      success: HttpApiSchema.Empty(202),
      error: [Errors.InvalidRequest, Errors.ApiUnavailable]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Ask for a password reset",
        description: "Mails a reset link if a user has this email; the answer is 202 either way."
      })
    ),
    HttpApiEndpoint.post("confirmPasswordReset", "/api/v1/auth/password-reset/confirm", {
      payload: Schema.Struct({ token: Token, password: Password }),
      success: HttpApiSchema.NoContent,
      error: [Errors.InvalidRequest, Errors.ApiUnavailable]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Set a new password",
        description: "With the token of the reset link; ends every session of the user."
      })
    )
  )
  .annotate(OpenApi.Description, "The console's users and sessions.")
