/**
 * Webhook endpoints (scope webhooks:manage): the account's endpoints, a new one (URL and events;
 * its signing secret shown once, with a copy button), enabling and disabling, rotating the secret
 * (the new one shown once), deleting, and each endpoint's delivery log (every attempt's status
 * code, latency and answer excerpt or error) with a Resend button.
 */
import { useState } from "preact/hooks"
import { call } from "../api.ts"
import { dateTime } from "../format.ts"
import { CopyButton } from "../parts/CopyButton.tsx"
import { ErrorNotice, Status } from "../parts/Notice.tsx"
import { useLoad } from "../useLoad.ts"

const EVENTS = ["task.succeeded", "task.failed", "task.reconciliation_required"] as const

const listEndpoints = () => call(({ api }) => api.webhooks.list()).then((body) => body.data)

type Endpoint = Awaited<ReturnType<typeof listEndpoints>>[number]

/** A signing secret, shown once. */
const Secret = (props: { readonly id: string; readonly secret: string; readonly what: string }) => (
  <div class="secret" role="status">
    <p>
      <strong>Copy this signing secret now.</strong> It is shown only once ({props.what}).
    </p>
    <code id={props.id}>{props.secret}</code> <CopyButton text={props.secret} label="Copy secret" />
  </div>
)

const NewEndpoint = (props: { readonly onCreated: () => void }) => {
  const [secret, setSecret] = useState<string | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  return (
    <section aria-labelledby="new-endpoint">
      <h2 id="new-endpoint">Add an endpoint</h2>
      <form
        aria-label="Add an endpoint"
        onSubmit={async (event) => {
          event.preventDefault()
          const element = event.currentTarget
          const form = new FormData(element)
          const payload = {
            url: String(form.get("url") ?? ""),
            events: EVENTS.filter((type) => form.getAll("event").includes(type))
          }
          try {
            const created = await call(({ api }) => api.webhooks.create({ payload }))
            setSecret(created.secret)
            setError(undefined)
            element.reset()
            props.onCreated()
          } catch (failure) {
            setSecret(undefined)
            setError(failure)
          }
        }}
      >
        <label class="field">
          <span>URL (public https)</span>
          <input name="url" type="url" required maxLength={2000} autoComplete="off" placeholder="https://" />
        </label>
        <fieldset>
          <legend>Events</legend>
          {EVENTS.map((type) => (
            <label key={type} class="check">
              <input type="checkbox" name="event" value={type} defaultChecked /> {type}
            </label>
          ))}
        </fieldset>
        <ErrorNotice error={error} />
        <button type="submit">Add endpoint</button>
      </form>
      {secret !== undefined ? <Secret id="new-webhook-secret" secret={secret} what="for the new endpoint" /> : null}
    </section>
  )
}

const Deliveries = (props: { readonly endpoint: Endpoint }) => {
  const deliveries = useLoad(
    () => call(({ api }) => api.webhooks.deliveries({ params: { id: props.endpoint.id }, query: { limit: 50 } })),
    [props.endpoint.id]
  )
  const [error, setError] = useState<unknown>(undefined)
  const [resent, setResent] = useState<string | undefined>(undefined)
  const headingId = `deliveries-${props.endpoint.id}`
  return (
    <section aria-labelledby={headingId}>
      <h3 id={headingId}>Deliveries to {props.endpoint.url}</h3>
      <button type="button" onClick={deliveries.reload}>
        Refresh
      </button>
      <ErrorNotice error={deliveries.error ?? error} />
      {resent !== undefined ? <Status>Delivery {resent} queued again.</Status> : null}
      {deliveries.data === undefined ? <Status>Loading…</Status> : null}
      {deliveries.data !== undefined && deliveries.data.data.length === 0 ? <p>No deliveries yet.</p> : null}
      {deliveries.data !== undefined && deliveries.data.data.length > 0 ? (
        <div class="scroll">
          <table>
            <caption class="visually-hidden">Deliveries, newest first</caption>
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
              {deliveries.data.data.map((delivery) => (
                <tr key={delivery.id}>
                  <td>
                    {delivery.type}
                    <br />
                    <code>{delivery.taskId}</code>
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

const EndpointRow = (props: {
  readonly endpoint: Endpoint
  readonly onChanged: () => void
  readonly onSecret: (secret: string) => void
  readonly onError: (error: unknown) => void
  readonly showing: boolean
  readonly onShow: () => void
}) => {
  const { endpoint } = props
  const act = (run: () => Promise<unknown>) => async () => {
    try {
      await run()
      props.onChanged()
    } catch (failure) {
      props.onError(failure)
    }
  }
  return (
    <tr>
      <td>
        <code>{endpoint.url}</code>
      </td>
      <td>{endpoint.events.join(", ")}</td>
      <td>
        {endpoint.enabled ? "Enabled" : "Disabled"}
        {endpoint.disabledReason !== null ? ` (${endpoint.disabledReason})` : ""}
      </td>
      <td class="actions">
        <button
          type="button"
          aria-label={`${endpoint.enabled ? "Disable" : "Enable"} ${endpoint.url}`}
          onClick={act(() =>
            call(({ api }) =>
              api.webhooks.update({ params: { id: endpoint.id }, payload: { enabled: !endpoint.enabled } })
            )
          )}
        >
          {endpoint.enabled ? "Disable" : "Enable"}
        </button>{" "}
        <button
          type="button"
          aria-label={`Rotate secret of ${endpoint.url}`}
          onClick={act(async () => {
            if (!confirm("Rotate the signing secret? The old one keeps verifying for a while.")) return
            const rotated = await call(({ api }) => api.webhooks.rotateSecret({ params: { id: endpoint.id } }))
            props.onSecret(rotated.secret)
          })}
        >
          Rotate secret
        </button>{" "}
        <button type="button" aria-pressed={props.showing} aria-label={`Deliveries to ${endpoint.url}`} onClick={props.onShow}>
          Deliveries
        </button>{" "}
        <button
          type="button"
          class="danger"
          aria-label={`Delete ${endpoint.url}`}
          onClick={act(async () => {
            if (!confirm(`Delete the endpoint ${endpoint.url}? Nothing more is delivered to it.`)) return
            await call(({ api }) => api.webhooks.delete({ params: { id: endpoint.id } }))
          })}
        >
          Delete
        </button>
      </td>
    </tr>
  )
}

export const Webhooks = () => {
  const endpoints = useLoad(listEndpoints)
  const [error, setError] = useState<unknown>(undefined)
  const [rotated, setRotated] = useState<string | undefined>(undefined)
  const [showing, setShowing] = useState<string | undefined>(undefined)
  const shown = endpoints.data?.find((endpoint) => endpoint.id === showing)
  return (
    <>
      <h1>Webhooks</h1>
      <NewEndpoint onCreated={endpoints.reload} />
      <section aria-labelledby="your-endpoints">
        <h2 id="your-endpoints">Your endpoints</h2>
        <ErrorNotice error={endpoints.error ?? error} />
        {rotated !== undefined ? <Secret id="rotated-webhook-secret" secret={rotated} what="the rotated one" /> : null}
        {endpoints.data === undefined ? <Status>Loading…</Status> : null}
        {endpoints.data !== undefined && endpoints.data.length === 0 ? <p>No endpoints yet.</p> : null}
        {endpoints.data !== undefined && endpoints.data.length > 0 ? (
          <div class="scroll">
            <table>
              <caption class="visually-hidden">Webhook endpoints</caption>
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">Events</th>
                  <th scope="col">State</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {endpoints.data.map((endpoint) => (
                  <EndpointRow
                    key={endpoint.id}
                    endpoint={endpoint}
                    onChanged={() => {
                      setError(undefined)
                      endpoints.reload()
                    }}
                    onSecret={setRotated}
                    onError={setError}
                    showing={showing === endpoint.id}
                    onShow={() => setShowing(showing === endpoint.id ? undefined : endpoint.id)}
                  />
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
      </section>
      {shown !== undefined ? <Deliveries endpoint={shown} /> : null}
    </>
  )
}
