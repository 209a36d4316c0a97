/**
 * Overview: balance, reserved and available (GET /api/v1/usage), and the spend of the latest
 * charges by day and by model, the model named by the task or chat request each charge is for.
 */
import { Effect } from "effect"
import { call } from "../api.ts"
import { BarChart, type Bar } from "../parts/BarChart.tsx"
import { ErrorNotice, Status } from "../parts/Notice.tsx"
import { day, usd } from "../format.ts"
import { useLoad } from "../useLoad.ts"

const sum = (pairs: ReadonlyArray<readonly [string, number]>): Array<Bar> => {
  const totals = new Map<string, number>()
  for (const [label, micros] of pairs) totals.set(label, (totals.get(label) ?? 0) + micros)
  return [...totals].map(([label, micros]) => ({ label, micros }))
}

const load = () =>
  call(({ api, chat }) =>
    Effect.all({
      usage: api.usage.get({ query: { limit: 100 } }),
      tasks: api.jobs.list({ query: { limit: 100 } }),
      chats: chat.chat.requests({ query: { limit: 100 } })
    })
  )

export const Overview = () => {
  const { data, error } = useLoad(load)
  if (data === undefined) return error === undefined ? <Status>Loading…</Status> : <ErrorNotice error={error} />
  const { usage, tasks, chats } = data
  const modelOf = new Map<string, string>([
    ...tasks.data.map((task) => [task.id, task.model] as const),
    ...chats.requests.map((request) => [request.id, request.model] as const)
  ])
  const charges = usage.entries.filter((entry) => entry.kind === "charge")
  const byDay = sum(charges.map((entry) => [day(entry.createdAt), entry.amountMicros] as const)).sort((a, b) =>
    a.label.localeCompare(b.label)
  )
  const byModel = sum(
    charges.map((entry) => [modelOf.get(entry.taskId ?? entry.chatRequestId ?? "") ?? "other", entry.amountMicros] as const)
  ).sort((a, b) => b.micros - a.micros)
  return (
    <>
      <h1>Overview</h1>
      <ErrorNotice error={error} />
      <dl class="balances">
        <div>
          <dt>Balance</dt>
          <dd>{usd(usage.balanceMicros)}</dd>
        </div>
        <div>
          <dt>Reserved</dt>
          <dd>{usd(usage.reservedMicros)}</dd>
        </div>
        <div>
          <dt>Available</dt>
          <dd>{usd(usage.availableMicros)}</dd>
        </div>
      </dl>
      {usage.paymentReview ? (
        <p class="notice error">A refund left the balance uncovered: new tasks are refused until it is settled.</p>
      ) : null}
      <section aria-labelledby="by-day">
        <h2 id="by-day">Spend by day</h2>
        <BarChart id="chart-day" title="Spend by day (UTC)" bars={byDay} />
      </section>
      <section aria-labelledby="by-model">
        <h2 id="by-model">Spend by model</h2>
        <BarChart id="chart-model" title="Spend by model" bars={byModel} />
      </section>
      <p class="hint">From the latest 100 ledger entries.</p>
    </>
  )
}
