/**
 * A webhook delivery log, newest first: each delivery's event, subject (task or payment), status
 * and every attempt (status code, latency, answer excerpt or error), with a Resend button. Shown
 * per endpoint (Webhooks) and per task (TaskDetail); `load` reads the page the log shows.
 */
import { useState } from "preact/hooks"
import type { WebhookDelivery } from "@taskmeter/http/Api"
import { call } from "../api.ts"
import { dateTime } from "../format.ts"
import { useLoad } from "../useLoad.ts"
import { ErrorNotice, Status } from "./Notice.tsx"

export const DeliveryLog = (props: {
  readonly id: string
  readonly title: string
  readonly load: () => Promise<{ readonly data: ReadonlyArray<WebhookDelivery> }>
  /** Shown instead of the table when there is none. */
  readonly empty: string
  /** What each row names beside its event: its task or payment (an endpoint's log), or where it goes (a task's). */
  readonly names: "subject" | "target"
}) => {
  const deliveries = useLoad(props.load, [props.id])
  const [error, setError] = useState<unknown>(undefined)
  const [resent, setResent] = useState<string | undefined>(undefined)
  const headingId = `deliveries-${props.id}`
  const rows = deliveries.data?.data
  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>{props.title}</h2>
      <button type="button" onClick={deliveries.reload}>
        Refresh
      </button>
      <ErrorNotice error={deliveries.error ?? error} />
      {resent !== undefined ? <Status>Delivery {resent} queued again.</Status> : null}
      {deliveries.data === undefined && deliveries.error === undefined ? <Status>Loading…</Status> : null}
      {rows !== undefined && rows.length === 0 ? <p>{props.empty}</p> : null}
      {rows !== undefined && rows.length > 0 ? (
        <div class="scroll">
          <table>
            <caption class="visually-hidden">{props.title}, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((delivery) => (
                <tr key={delivery.id}>
                  <td>
                    {delivery.type}
                    <br />
                    {props.names === "subject" ? (
                      <code>{delivery.taskId ?? delivery.paymentId}</code>
                    ) : delivery.endpointId === null ? (
                      <>
                        to its own webhookUrl <code>{delivery.url}</code>
                      </>
                    ) : (
                      <code>{delivery.url}</code>
                    )}
                    <br />
                    {dateTime(delivery.occurredAt)}
                  </td>
                  <td>{delivery.status}</td>
                  <td>
                    {delivery.attempts.length === 0 ? (
                      "none yet"
                    ) : (
                      <ol class="attempts">
                        {delivery.attempts.map((attempt, index) => (
                          <li key={index}>
                            {attempt.statusCode === null ? "no answer" : `HTTP ${attempt.statusCode}`}, {attempt.latencyMs} ms
                            {attempt.error !== null ? `: ${attempt.error}` : ""}
                            {attempt.responseExcerpt ? <pre class="excerpt">{attempt.responseExcerpt}</pre> : null}
                          </li>
                        ))}
                      </ol>
                    )}
                  </td>
                  <td>
                    <button
                      type="button"
                      aria-label={`Resend ${delivery.id}`}
                      onClick={async () => {
                        try {
                          await call(({ api }) => api.webhooks.resend({ params: { id: delivery.id } }))
                          setResent(delivery.id)
                          setError(undefined)
                          deliveries.reload()
                        } catch (failure) {
                          setError(failure)
                        }
                      }}
                    >
                      Resend
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
