/**
 * Tasks: the caller's tasks of GET /api/v1/jobs (filtered by status and model, older pages on
 * demand), refreshed every few seconds while any shown task is still running.
 */
import { useEffect, useState } from "preact/hooks"
import type { Task } from "@taskmeter/kernel"
import { call } from "../api.ts"
import { isTerminal } from "../follow.ts"
import { dateTime, usd } from "../format.ts"
import { Link } from "../parts/Link.tsx"
import { ErrorNotice, Status } from "../parts/Notice.tsx"

const STATUSES = ["queued", "running", "succeeded", "failed", "reconciliation_required"] as const
const POLL_MS = 3000

export const StatusBadge = (props: { readonly status: string }) => (
  <span class={`badge badge-${props.status}`}>{props.status.replaceAll("_", " ")}</span>
)

export const Tasks = () => {
  const [status, setStatus] = useState("")
  const [model, setModel] = useState("")
  const [tasks, setTasks] = useState<ReadonlyArray<Task.Task> | undefined>(undefined)
  const [cursor, setCursor] = useState<string | null>(null)
  const [error, setError] = useState<unknown>(undefined)
  const query = (before?: string) => ({
    ...(status === "" ? {} : { status: status as Task.Task["status"] }),
    ...(model.trim() === "" ? {} : { model: model.trim() }),
    ...(before === undefined ? {} : { before })
  })
  const load = async (before?: string) => {
    try {
      const page = await call(({ api }) => api.jobs.list({ query: query(before) }))
      setTasks((old) => (before === undefined ? page.data : [...(old ?? []), ...page.data]))
      if (before !== undefined || cursor === null) setCursor(page.nextCursor)
      setError(undefined)
    } catch (failure) {
      setError(failure)
    }
  }
  // Reloads when the filters change.
  useEffect(() => {
    setCursor(null)
    void load()
  }, [status, model])
  const running = tasks?.some((task) => !isTerminal(task)) ?? false
  // Polls the first page while a task runs.
  useEffect(() => {
    if (!running) return
    const timer = setInterval(() => void load(), POLL_MS)
    return () => clearInterval(timer)
  }, [running, status, model])
  return (
    <>
      <h1>Tasks</h1>
      <form class="filters" aria-label="Filter tasks" onSubmit={(event) => event.preventDefault()}>
        <label class="field">
          <span>Status</span>
          <select value={status} onChange={(event) => setStatus(event.currentTarget.value)}>
            <option value="">Any status</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s.replaceAll("_", " ")}
              </option>
            ))}
          </select>
        </label>
        <label class="field">
          <span>Model</span>
          <input type="search" value={model} onChange={(event) => setModel(event.currentTarget.value)} placeholder="model slug" />
        </label>
      </form>
      <ErrorNotice error={error} />
      {tasks === undefined ? <Status>Loading…</Status> : null}
      {tasks !== undefined && tasks.length === 0 ? (
        <p>
          No tasks yet. <Link href="/playground">Run one in the playground</Link>.
        </p>
      ) : null}
      {tasks !== undefined && tasks.length > 0 ? (
        <div class="scroll">
          <table>
            <caption class="visually-hidden">Tasks, newest first{running ? "; refreshed while some are running" : ""}</caption>
            <thead>
              <tr>
                <th scope="col">Task</th>
                <th scope="col">Status</th>
                <th scope="col">Model</th>
                <th scope="col" class="number">
                  Price
                </th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {tasks.map((task) => (
                <tr key={task.id}>
                  <td>
                    <Link href={`/tasks/${task.id}`}>{task.id.slice(0, 13)}…</Link>
                  </td>
                  <td>
                    <StatusBadge status={task.status} />
                  </td>
                  <td>{task.model}</td>
                  <td class="number">{usd(task.priceMicros)}</td>
                  <td>{dateTime(task.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {cursor !== null ? (
        <button type="button" class="secondary" onClick={() => load(cursor)}>
          Load older tasks
        </button>
      ) : null}
    </>
  )
}
