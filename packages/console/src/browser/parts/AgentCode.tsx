/**
 * "Sign in with a one-time code": makes a code (POST /api/v1/auth/agent-codes) and shows it once,
 * with a copy button and when it expires, for the agent's MCP sign-in page. Under a session only.
 */
import { useState } from "preact/hooks"
import { call } from "../api.ts"
import { dateTime } from "../format.ts"
import { CopyButton } from "./CopyButton.tsx"
import { ErrorNotice } from "./Notice.tsx"

export const AgentCode = () => {
  const [made, setMade] = useState<{ readonly code: string; readonly expiresAt: string } | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  return (
    <section aria-labelledby="agent-code">
      <h2 id="agent-code">Sign in with a one-time code</h2>
      <p>Instead of an API key, paste a one-time code into the agent's sign-in page. A code works once and for ten minutes.</p>
      <ErrorNotice error={error} />
      <button
        type="button"
        onClick={async () => {
          try {
            setMade(await call(({ api }) => api.agentCodes.create()))
            setError(undefined)
          } catch (failure) {
            setError(failure)
          }
        }}
      >
        Make a sign-in code
      </button>
      {made !== undefined ? (
        <div class="secret" role="status">
          <p>
            <strong>Copy this code now.</strong> It is shown only once and expires at {dateTime(made.expiresAt)}.
          </p>
          <code id="agent-code-value">{made.code}</code> <CopyButton text={made.code} label="Copy code" />
        </div>
      ) : null}
    </section>
  )
}
