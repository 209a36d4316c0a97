/** Chat requests: the history of GET /api/v1/chat/requests with tokens and charges (never the text). */
import { useState } from "preact/hooks"
import type { ChatRequestView } from "@taskmeter/http/Api"
import { call } from "../api.ts"
import { dateTime, usd } from "../format.ts"
import { ErrorNotice, Status } from "../parts/Notice.tsx"
import { NumberHeads } from "../parts/Table.tsx"
import { useLoad } from "../useLoad.ts"

export const ChatRequests = () => {
  const [older, setOlder] = useState<ReadonlyArray<ChatRequestView>>([])
  const [cursor, setCursor] = useState<string | null | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const first = useLoad(() => call(({ chat }) => chat.chat.requests({ query: {} })))
  const next = cursor === undefined ? first.data?.nextCursor : cursor
  const rows = [...(first.data?.requests ?? []), ...older]
  return (
    <>
      <h1>Chat requests</h1>
      <ErrorNotice error={first.error ?? error} />
      {first.data === undefined ? <Status>Loading…</Status> : null}
      {first.data !== undefined && rows.length === 0 ? <p>No chat requests yet.</p> : null}
      {rows.length > 0 ? (
        <div class="scroll">
          <table>
            <caption class="visually-hidden">Chat requests, newest first</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Model</th>
                <th scope="col">Status</th>
                <NumberHeads labels={["Prompt tokens", "Completion tokens", "Charged"]} />
              </tr>
            </thead>
            <tbody>
              {rows.map((request) => (
                <tr key={request.id}>
                  <td>{dateTime(request.createdAt)}</td>
                  <td>{request.model}</td>
                  <td>{request.status}</td>
                  <td class="number">{request.usage?.prompt_tokens ?? "—"}</td>
                  <td class="number">{request.usage?.completion_tokens ?? "—"}</td>
                  <td class="number">{request.chargedMicros === null ? "—" : usd(request.chargedMicros)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {typeof next === "string" ? (
        <button
          type="button"
          class="secondary"
          onClick={async () => {
            try {
              const page = await call(({ chat }) => chat.chat.requests({ query: { before: next } }))
              setOlder((old) => [...old, ...page.requests])
              setCursor(page.nextCursor)
            } catch (failure) {
              setError(failure)
            }
          }}
        >
          Load older requests
        </button>
      ) : null}
    </>
  )
}
