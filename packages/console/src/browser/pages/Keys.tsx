/**
 * API keys: the account's keys (GET /api/v1/keys), a new one with a name, scopes and optional
 * limits (its secret shown once, with a copy button), and revocation; and adding a passkey to the
 * user's sign-in. Both under a session only; a tab signed in with a key is told so.
 */
import { useState } from "preact/hooks"
import { call } from "../api.ts"
import { Passkeys } from "../parts/Passkeys.tsx"
import { CopyButton } from "../parts/CopyButton.tsx"
import { dateTime } from "../format.ts"
import { ErrorNotice, Status } from "../parts/Notice.tsx"
import type { Who } from "../session.ts"
import { useLoad } from "../useLoad.ts"

const SCOPES = ["jobs:create", "jobs:read", "usage:read", "chat:create", "billing:create"] as const

const listKeys = () => call(({ api }) => api.keys.list()).then((body) => body.data)

const NewKey = (props: { readonly onCreated: () => void }) => {
  const [secret, setSecret] = useState<string | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  return (
    <section aria-labelledby="new-key">
      <h2 id="new-key">Create a key</h2>
      <form
        aria-label="Create a key"
        onSubmit={async (event) => {
          event.preventDefault()
          const element = event.currentTarget
          const form = new FormData(element)
          const payload = {
            name: String(form.get("name") ?? ""),
            scopes: SCOPES.filter((scope) => form.getAll("scope").includes(scope)),
            ...(form.get("rate") ? { rateLimitPerMinute: Number(form.get("rate")) } : {}),
            ...(form.get("usage") ? { usageLimit: Number(form.get("usage")) } : {})
          }
          try {
            const created = await call(({ api }) => api.keys.create({ payload }))
            setSecret(created.secret)
            setError(undefined)
            element.reset()
            props.onCreated()
          } catch (failure) {
            setError(failure)
          }
        }}
      >
        <label class="field">
          <span>Name</span>
          <input name="name" required maxLength={100} autoComplete="off" />
        </label>
        <fieldset>
          <legend>Scopes</legend>
          {SCOPES.map((scope) => (
            <label key={scope} class="check">
              <input type="checkbox" name="scope" value={scope} defaultChecked={scope !== "billing:create"} /> {scope}
            </label>
          ))}
        </fieldset>
        <label class="field">
          <span>Requests per minute (optional)</span>
          <input name="rate" type="number" min={1} step={1} inputMode="numeric" />
        </label>
        <label class="field">
          <span>Usage limit: billable submissions, ever (optional)</span>
          <input name="usage" type="number" min={1} step={1} inputMode="numeric" />
        </label>
        <ErrorNotice error={error} />
        <button type="submit">Create key</button>
      </form>
      {secret !== undefined ? (
        <div class="secret" role="status">
          <p>
            <strong>Copy this key now.</strong> It is shown only once.
          </p>
          <code id="new-secret">{secret}</code> <CopyButton text={secret} label="Copy key" />
        </div>
      ) : null}
    </section>
  )
}

export const Keys = (props: { readonly who: Who }) => {
  const keys = useLoad(listKeys)
  const [error, setError] = useState<unknown>(undefined)
  if (props.who.kind === "key") {
    return (
      <>
        <h1>API keys</h1>
        <p>Keys are managed when signed in with an email and password; this tab uses an API key.</p>
      </>
    )
  }
  return (
    <>
      <h1>API keys</h1>
      <NewKey onCreated={keys.reload} />
      <Passkeys />
      <section aria-labelledby="your-keys">
        <h2 id="your-keys">Your keys</h2>
        <ErrorNotice error={keys.error ?? error} />
        {keys.data === undefined ? <Status>Loading…</Status> : null}
        {keys.data !== undefined && keys.data.length === 0 ? <p>No keys yet.</p> : null}
        {keys.data !== undefined && keys.data.length > 0 ? (
          <div class="scroll">
            <table>
              <caption class="visually-hidden">API keys</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Key</th>
                  <th scope="col">Scopes</th>
                  <th scope="col">Limits</th>
                  <th scope="col">Created</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.data.map((key) => (
                  <tr key={key.id}>
                    <td>{key.name}</td>
                    <td>
                      <code>{key.displayPrefix}…</code>
                    </td>
                    <td>{key.scopes.join(", ")}</td>
                    <td>
                      {key.rateLimitPerMinute === null ? "default rate" : `${key.rateLimitPerMinute}/min`};{" "}
                      {key.usageLimit === null ? `${key.usageCount} used` : `${key.usageCount} of ${key.usageLimit} used`}
                    </td>
                    <td>{dateTime(key.createdAt)}</td>
                    <td>
                      {key.revokedAt ? (
                        "Revoked"
                      ) : (
                        <button
                          type="button"
                          class="danger"
                          aria-label={`Revoke ${key.name}`}
                          onClick={async () => {
                            if (!confirm(`Revoke the key "${key.name}"? Programs using it stop working at once.`)) return
                            try {
                              await call(({ api }) => api.keys.revoke({ params: { id: key.id } }))
                              keys.reload()
                            } catch (failure) {
                              setError(failure)
                            }
                          }}
                        >
                          Revoke
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
      </section>
    </>
  )
}
