/**
 * Operator › Reconciliation: the tasks held in reconciliation_required (oldest first, with what
 * the upstream last answered), each resolvable as the CLI's `task resolve --failed` does: the
 * reservation released, the reason noted on the ledger (AdminRpc's TaskList and TaskResolve).
 * Resolving as succeeded attaches results, which stays with the CLI.
 */
import { useState } from "preact/hooks"
import { usd } from "../../format.ts"
import { operator } from "../../operator.ts"
import { ErrorNotice, Status } from "../../parts/Notice.tsx"
import { useLoad } from "../../useLoad.ts"

export const OperatorReconciliation = () => {
  const queue = useLoad(() => operator((client) => client.TaskList({ status: "reconciliation_required" })))
  const [error, setError] = useState<unknown>(undefined)
  const [done, setDone] = useState<string | undefined>(undefined)
  const tasks = queue.data?.tasks ?? []
  return (
    <>
      <h1>Reconciliation queue</h1>
      <ErrorNotice error={queue.error} />
      <ErrorNotice error={error} />
      {done === undefined ? null : <Status>{done}</Status>}
      {queue.data !== undefined && tasks.length === 0 ? <Status>No task waits for reconciliation.</Status> : null}
      {tasks.map((task) => (
        <form
          key={task.id}
          class="card"
          aria-label={`Task ${task.id}`}
          onSubmit={async (event) => {
            event.preventDefault()
            const reason = String(new FormData(event.currentTarget).get("reason")).trim()
            setDone(undefined)
            setError(undefined)
            try {
              await operator((client) =>
                client.TaskResolve({ taskId: task.id, accountId: task.accountId, outcome: "failed", reason })
              )
              setDone(`Task ${task.id} resolved as failed; its reservation is released.`)
              queue.reload()
            } catch (failure) {
              setError(failure)
            }
          }}
        >
          <h2>
            <code>{task.id}</code>
          </h2>
          <dl>
            <dt>Account</dt>
            <dd>
              <code>{task.accountId}</code>
            </dd>
            <dt>Model</dt>
            <dd>{task.model}</dd>
            <dt>Reserved</dt>
            <dd>{usd(task.priceMicros)}</dd>
            <dt>Waiting</dt>
            <dd>{Math.round(task.ageSeconds / 60)} min</dd>
            <dt>Upstream answered</dt>
            <dd>{task.upstreamAnswer ?? "nothing recorded"}</dd>
          </dl>
          <label class="field">
            <span>Reason</span>
            <input name="reason" required maxLength={500} />
          </label>
          <button type="submit">Resolve as failed</button>
        </form>
      ))}
    </>
  )
}
