/**
 * One task: its state (followed live until terminal), price, charge, a preview of every result,
 * and its webhook delivery log (its own webhookUrl's and the account's endpoints') with Resend.
 */
import { useEffect, useState } from "preact/hooks"
import type { Task } from "@taskmeter/kernel"
import { chargeOf, follow } from "../follow.ts"
import { dateTime, usd } from "../format.ts"
import { call } from "../api.ts"
import { Assets } from "../parts/AssetView.tsx"
import { DeliveryLog } from "../parts/DeliveryLog.tsx"
import { Link } from "../parts/Link.tsx"
import { ErrorNotice, Status } from "../parts/Notice.tsx"
import { StatusBadge } from "./Tasks.tsx"

/** The facts and results of a task, shared with the playground's inline result. */
export const TaskView = (props: { readonly task: Task.Task; readonly charged: number | undefined }) => {
  const { task } = props
  return (
    <>
      <dl class="facts">
        <div>
          <dt>Status</dt>
          <dd>
            <StatusBadge status={task.status} />
            {task.errorCode ? ` (${task.errorCode})` : ""}
            {task.status === "running" && task.progress !== undefined ? ` ${task.progress}%` : ""}
          </dd>
        </div>
        <div>
          <dt>Model</dt>
          <dd>{task.model}</dd>
        </div>
        <div>
          <dt>Price</dt>
          <dd>{usd(task.priceMicros)}</dd>
        </div>
        <div>
          <dt>Charged</dt>
          <dd class="charged">{props.charged === undefined ? "—" : usd(props.charged)}</dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>{dateTime(task.createdAt)}</dd>
        </div>
        <div>
          <dt>Provider</dt>
          <dd>{task.provider ?? "—"}</dd>
        </div>
      </dl>
      {task.assets.length > 0 ? <Assets assets={task.assets} /> : null}
    </>
  )
}

export const TaskDetail = (props: { readonly id: string }) => {
  const [task, setTask] = useState<Task.Task | undefined>(undefined)
  const [charged, setCharged] = useState<number | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  useEffect(() => {
    const stop = new AbortController()
    follow(props.id, setTask, stop.signal)
      .then(async (last) => (last.status === "succeeded" ? setCharged(await chargeOf(last.id)) : undefined))
      .catch(setError)
    return () => stop.abort()
  }, [props.id])
  return (
    <>
      <h1>Task {props.id}</h1>
      <p>
        <Link href="/tasks">All tasks</Link>
      </p>
      <ErrorNotice error={error} />
      {task === undefined && error === undefined ? <Status>Loading…</Status> : null}
      {task !== undefined ? <TaskView task={task} charged={charged} /> : null}
      {task !== undefined ? (
        <DeliveryLog
          key={task.status}
          id={props.id}
          title="Webhook deliveries"
          empty="No webhook deliveries for this task."
          names="target"
          load={() => call(({ api }) => api.jobs.webhookDeliveries({ params: { id: props.id }, query: { limit: 50 } }))}
        />
      ) : null}
    </>
  )
}
