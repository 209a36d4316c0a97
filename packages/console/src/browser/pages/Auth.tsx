/**
 * The signed-out pages: sign in (with email and password, a passkey, or an API key for this tab),
 * sign up, verify an email address from the mailed link, and reset a password.
 */
import type { ComponentChildren } from "preact"
import { useEffect, useState } from "preact/hooks"
import { Link } from "../parts/Link.tsx"
import { ErrorNotice, Status } from "../parts/Notice.tsx"
import { Plain } from "../parts/Layout.tsx"
import * as Session from "../session.ts"

type Submit = (form: FormData) => Promise<void>

/** A form that runs `onSubmit` once at a time and shows its failure. */
const Form = (props: { readonly label: string; readonly onSubmit: Submit; readonly children: ComponentChildren }) => {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  return (
    <form
      aria-label={props.label}
      onSubmit={async (event) => {
        event.preventDefault()
        setBusy(true)
        setError(undefined)
        try {
          await props.onSubmit(new FormData(event.currentTarget))
        } catch (failure) {
          setError(failure)
        } finally {
          setBusy(false)
        }
      }}
    >
      {props.children}
      <ErrorNotice error={error} />
      <button type="submit" disabled={busy}>
        {props.label}
      </button>
    </form>
  )
}

const text = (form: FormData, name: string): string => String(form.get(name) ?? "").trim()

const Field = (props: {
  readonly name: string
  readonly label: string
  readonly type?: "text" | "email" | "password"
  readonly autocomplete?: string
  readonly required?: boolean
  readonly minLength?: number
  readonly value?: string
}) => (
  <label class="field">
    <span>{props.label}</span>
    <input
      name={props.name}
      // Preact types each input type apart; the three used here take the same attributes.
      type={(props.type ?? "text") as "text"}
      autoComplete={props.autocomplete}
      required={props.required ?? true}
      minLength={props.minLength}
      defaultValue={props.value}
    />
  </label>
)

/** "Sign in with a passkey": the browser's own prompt; a refusal or a cancelled prompt is shown. */
const PasskeySignIn = (props: { readonly onSignedIn: (who: Session.Who) => void }) => {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  return (
    <div class="passkey-sign-in">
      <ErrorNotice error={error} />
      <button
        type="button"
        class="secondary"
        disabled={busy}
        onClick={async () => {
          setBusy(true)
          setError(undefined)
          try {
            props.onSignedIn(await Session.signInWithPasskey())
          } catch (failure) {
            setError(failure)
          } finally {
            setBusy(false)
          }
        }}
      >
        Sign in with a passkey
      </button>
    </div>
  )
}

const SignIn = (props: { readonly onSignedIn: (who: Session.Who) => void }) => (
  <Plain>
    <h1>Sign in</h1>
    <Form
      label="Sign in"
      onSubmit={async (form) => props.onSignedIn(await Session.signIn(text(form, "email"), String(form.get("password"))))}
    >
      <Field name="email" label="Email" type="email" autocomplete="email" />
      <Field name="password" label="Password" type="password" autocomplete="current-password" />
    </Form>
    <PasskeySignIn onSignedIn={props.onSignedIn} />
    <p>
      New here? <Link href="/sign-up">Create an account</Link>. <Link href="/reset-password">Forgot your password?</Link>
    </p>
    <details class="key-sign-in">
      <summary>Use an API key instead</summary>
      <Form label="Use this key" onSubmit={async (form) => props.onSignedIn(await Session.useKey(text(form, "key")))}>
        <Field name="key" label="API key (kept for this tab only)" type="password" autocomplete="off" />
      </Form>
    </details>
  </Plain>
)

/** Sign-up; an invitation link (`/sign-up?invitation=...`) fills in its invitation. */
const SignUp = (props: { readonly invitation: string | null; readonly onSignedUp: (who: Session.Who) => void }) => {
  const [done, setDone] = useState<string | undefined>(undefined)
  return (
    <Plain>
      <h1>Create an account</h1>
      {done !== undefined ? (
        <Status>
          Check {done}: we sent a link to verify the address. You are signed in; <Link href="/">open the console</Link>.
        </Status>
      ) : (
        <Form
          label="Sign up"
          onSubmit={async (form) => {
            const invitation = text(form, "invitation")
            const who = await Session.signUp(
              text(form, "email"),
              String(form.get("password")),
              invitation === "" ? undefined : invitation
            )
            setDone(text(form, "email"))
            props.onSignedUp(who)
          }}
        >
          <Field name="email" label="Email" type="email" autocomplete="email" />
          <Field
            name="password"
            label="Password (10 characters or more)"
            type="password"
            autocomplete="new-password"
            minLength={10}
          />
          <Field
            name="invitation"
            label="Invitation code (if you have one)"
            required={false}
            autocomplete="off"
            {...(props.invitation === null ? {} : { value: props.invitation })}
          />
        </Form>
      )}
      <p>
        Have an account? <Link href="/sign-in">Sign in</Link>.
      </p>
    </Plain>
  )
}

const VerifyEmail = (props: { readonly token: string | null }) => {
  const [state, setState] = useState<"working" | "done" | unknown>("working")
  useEffect(() => {
    if (props.token === null) return setState(new Error("This link has no token: open the link from the email again."))
    Session.verifyEmail(props.token).then(
      () => setState("done"),
      (error: unknown) => setState(error)
    )
  }, [props.token])
  return (
    <Plain>
      <h1>Verify your email</h1>
      {state === "working" ? <Status>Verifying…</Status> : null}
      {state === "done" ? (
        <Status>
          Your email address is verified. <a href="/">Open the console</a>.
        </Status>
      ) : null}
      {state !== "working" && state !== "done" ? <ErrorNotice error={state} /> : null}
    </Plain>
  )
}

const ResetPassword = (props: { readonly token: string | null }) => {
  const [done, setDone] = useState<string | undefined>(undefined)
  const token = props.token
  return (
    <Plain>
      <h1>Reset your password</h1>
      {done !== undefined ? <Status>{done}</Status> : null}
      {done === undefined && token === null ? (
        <Form
          label="Send a reset link"
          onSubmit={async (form) => {
            await Session.requestPasswordReset(text(form, "email"))
            setDone("If an account has this address, a reset link is on its way.")
          }}
        >
          <Field name="email" label="Email" type="email" autocomplete="email" />
        </Form>
      ) : null}
      {done === undefined && token !== null ? (
        <Form
          label="Set the new password"
          onSubmit={async (form) => {
            await Session.confirmPasswordReset(token, String(form.get("password")))
            setDone("Your password is changed; every other session was signed out.")
          }}
        >
          <Field
            name="password"
            label="New password (10 characters or more)"
            type="password"
            autocomplete="new-password"
            minLength={10}
          />
        </Form>
      ) : null}
      <p>
        <Link href="/sign-in">Back to sign in</Link>
      </p>
    </Plain>
  )
}

export const AuthPage = (props: {
  readonly path: string
  readonly query: URLSearchParams
  readonly onSignedIn: (who: Session.Who) => void
  readonly onSignedUp: (who: Session.Who) => void
}) => {
  switch (props.path) {
    case "/sign-up":
      return <SignUp invitation={props.query.get("invitation")} onSignedUp={props.onSignedUp} />
    case "/verify-email":
      return <VerifyEmail token={props.query.get("token")} />
    case "/reset-password":
      return <ResetPassword token={props.query.get("token")} />
    default:
      return <SignIn onSignedIn={props.onSignedIn} />
  }
}
