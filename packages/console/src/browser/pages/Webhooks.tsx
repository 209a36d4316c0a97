/**
 * Webhook endpoints (scope webhooks:manage): the account's endpoints, a new one (URL and events:
 * the settling task events checked, task.running and the payment events to choose; its signing
 * secret shown once, with a copy button), changing an endpoint's events, enabling and disabling,
 * rotating the secret (the new one shown once), deleting, and each endpoint's delivery log
 * (DeliveryLog) with a Resend button.
 */
import { useState } from "preact/hooks"
import { call } from "../api.ts"
import { CopyButton } from "../parts/CopyButton.tsx"
import { DeliveryLog } from "../parts/DeliveryLog.tsx"
import { ErrorNotice, Status } from "../parts/Notice.tsx"
import { useLoad } from "../useLoad.ts"

const EVENT_GROUPS = [
  {
    legend: "Task events",
    events: [
      ["task.succeeded", "succeeded"],
      ["task.failed", "failed"],
      ["task.reconciliation_required", "held for reconciliation"],
      ["task.running", "started running; only when chosen"]
    ]
  },
  {
    legend: "Payment events",
    events: [
      ["payment.succeeded", "credits granted"],
      ["payment.refunded", "refunded"],
      ["payment.disputed", "dispute opened, amount held"],
      ["payment.dispute_closed", "dispute won or lost"]
    ]
  }
] as const

const EVENTS = EVENT_GROUPS.flatMap((group) => group.events.map(([type]) => type))

/** Checked for a new endpoint: what the API gives one made without a list. */
const DEFAULT_EVENTS: ReadonlyArray<string> = ["task.succeeded", "task.failed", "task.reconciliation_required"]

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
          const payload = { url: String(form.get("url") ?? ""), events: chosenEvents(form) }
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
        <EventChoices checked={DEFAULT_EVENTS} />
        <ErrorNotice error={error} />
        <button type="submit">Add endpoint</button>
      </form>
      {secret !== undefined ? <Secret id="new-webhook-secret" secret={secret} what="for the new endpoint" /> : null}
    </section>
  )
}

const Deliveries = (props: { readonly endpoint: Endpoint }) => (
  <DeliveryLog
    id={props.endpoint.id}
    title={`Deliveries to ${props.endpoint.url}`}
    empty="No deliveries yet."
    names="subject"
    load={() => call(({ api }) => api.webhooks.deliveries({ params: { id: props.endpoint.id }, query: { limit: 50 } }))}
  />
)

/** The events to deliver to an endpoint, as checkboxes named `event`: task events, then payment events. */
const EventChoices = (props: { readonly checked: ReadonlyArray<string> }) => (
  <>
    {EVENT_GROUPS.map((group) => (
      <fieldset key={group.legend}>
        <legend>{group.legend}</legend>
        {group.events.map(([type, meaning]) => (
          <label key={type} class="check">
            <input type="checkbox" name="event" value={type} defaultChecked={props.checked.includes(type)} /> {type}{" "}
            <small>({meaning})</small>
          </label>
        ))}
      </fieldset>
    ))}
  </>
)

const chosenEvents = (form: FormData) => EVENTS.filter((type) => form.getAll("event").includes(type))

/** Changes which events an endpoint receives. */
const EditEvents = (props: { readonly endpoint: Endpoint; readonly onSaved: () => void }) => {
  const [error, setError] = useState<unknown>(undefined)
  const headingId = `events-${props.endpoint.id}`
  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>Events delivered to {props.endpoint.url}</h2>
      <form
        aria-labelledby={headingId}
        onSubmit={async (event) => {
          event.preventDefault()
          const events = chosenEvents(new FormData(event.currentTarget))
          try {
            await call(({ api }) => api.webhooks.update({ params: { id: props.endpoint.id }, payload: { events } }))
            setError(undefined)
            props.onSaved()
          } catch (failure) {
            setError(failure)
          }
        }}
      >
        <EventChoices checked={props.endpoint.events} />
        <ErrorNotice error={error} />
        <button type="submit">Save events</button>
      </form>
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
  readonly editing: boolean
  readonly onEdit: () => void
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
            call(({ api }) => api.webhooks.update({ params: { id: endpoint.id }, payload: { enabled: !endpoint.enabled } }))
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
        <button type="button" aria-pressed={props.editing} aria-label={`Events of ${endpoint.url}`} onClick={props.onEdit}>
          Events
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
  const [editing, setEditing] = useState<string | undefined>(undefined)
  const shown = endpoints.data?.find((endpoint) => endpoint.id === showing)
  const edited = endpoints.data?.find((endpoint) => endpoint.id === editing)
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
                    editing={editing === endpoint.id}
                    onEdit={() => setEditing(editing === endpoint.id ? undefined : endpoint.id)}
                  />
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
      </section>
      {edited !== undefined ? (
        <EditEvents
          key={edited.id}
          endpoint={edited}
          onSaved={() => {
            setEditing(undefined)
            endpoints.reload()
          }}
        />
      ) : null}
      {shown !== undefined ? <Deliveries endpoint={shown} /> : null}
    </>
  )
}
