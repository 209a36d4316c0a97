/** "Add a passkey": registers a passkey of this browser for the signed-in user, saying when it is added. */
import { useState } from "preact/hooks"
import { addPasskey } from "../session.ts"
import { ErrorNotice, Status } from "./Notice.tsx"

export const AddPasskey = () => {
  const [added, setAdded] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  return (
    <section aria-labelledby="passkeys">
      <h2 id="passkeys">Passkeys</h2>
      <p>Sign in with this device's screen lock or a security key instead of your password.</p>
      <ErrorNotice error={error} />
      {added ? <Status>Passkey added. You can sign in with it now.</Status> : null}
      <button
        type="button"
        onClick={async () => {
          setError(undefined)
          setAdded(false)
          try {
            await addPasskey()
            setAdded(true)
          } catch (failure) {
            setError(failure)
          }
        }}
      >
        Add a passkey
      </button>
    </section>
  )
}
