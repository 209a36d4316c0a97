/**
 * The signed-in user's passkeys: the list (name, added, last used), "Add a passkey" of this
 * browser under a name, and removal of one (after a confirmation), all through the public API.
 */
import { useState } from "preact/hooks"
import { call } from "../api.ts"
import { dateTime } from "../format.ts"
import { addPasskey } from "../session.ts"
import { useLoad } from "../useLoad.ts"
import { ErrorNotice, Status } from "./Notice.tsx"

export const Passkeys = () => {
  const passkeys = useLoad(() => call(({ api }) => api.passkeys.list()).then((reply) => reply.data))
  const [note, setNote] = useState<string | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const run = async (action: () => Promise<void>, done: string) => {
    setError(undefined)
    setNote(undefined)
    try {
      await action()
      setNote(done)
      passkeys.reload()
    } catch (failure) {
      setError(failure)
    }
  }
  return (
    <section aria-labelledby="passkeys">
      <h2 id="passkeys">Passkeys</h2>
      <p>Sign in with this device's screen lock or a security key instead of your password.</p>
      <ErrorNotice error={error ?? passkeys.error} />
      {note === undefined ? null : <Status>{note}</Status>}
      <form
        aria-label="Add a passkey"
        onSubmit={(event) => {
          event.preventDefault()
          const form = event.currentTarget
          const name = String(new FormData(form).get("name") ?? "").trim()
          void run(async () => {
            await addPasskey(name === "" ? undefined : name)
            form.reset()
          }, "Passkey added. You can sign in with it now.")
        }}
      >
        <label class="field">
          <span>Passkey name (optional)</span>
          <input name="name" maxLength={64} placeholder="Passkey" autocomplete="off" />
        </label>
        <button type="submit">Add a passkey</button>
      </form>
      {passkeys.data !== undefined && passkeys.data.length === 0 ? <p>No passkeys yet.</p> : null}
      {passkeys.data !== undefined && passkeys.data.length > 0 ? (
        <div class="scroll">
          <table>
            <caption class="visually-hidden">Your passkeys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Added</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {passkeys.data.map((passkey) => (
                <tr key={passkey.id}>
                  <td>{passkey.name}</td>
                  <td>{dateTime(passkey.createdAt)}</td>
                  <td>{passkey.lastUsedAt === null ? "Never" : dateTime(passkey.lastUsedAt)}</td>
                  <td>
                    <button
                      type="button"
                      class="danger"
                      aria-label={`Remove passkey ${passkey.name}`}
                      onClick={() => {
                        if (!confirm(`Remove the passkey "${passkey.name}"? It will no longer sign you in.`)) return
                        void run(
                          () => call(({ api }) => api.passkeys.remove({ params: { id: passkey.id } })).then(() => undefined),
                          `Passkey "${passkey.name}" removed.`
                        )
                      }}
                    >
                      Remove
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  )
}
