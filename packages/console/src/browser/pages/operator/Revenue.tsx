/**
 * Operator › Revenue: the revenue report (AdminRpc's Revenue, as `taskmeter admin revenue`) of a
 * period of UTC days, by default the last 30 up to today: a bar chart of what was charged per day
 * (tasks and chat), a table by day and model, refunds and the totals.
 */
import { useState } from "preact/hooks"
import { usd } from "../../format.ts"
import { operator } from "../../operator.ts"
import { BarChart } from "../../parts/BarChart.tsx"
import { ErrorNotice, Status } from "../../parts/Notice.tsx"
import { NumberHeads } from "../../parts/Table.tsx"
import { useLoad } from "../../useLoad.ts"

const DAY_MS = 86_400_000
const isoDay = (at: number) => new Date(at).toISOString().slice(0, 10)

export const OperatorRevenue = () => {
  const [period, setPeriod] = useState(() => ({ from: isoDay(Date.now() - 29 * DAY_MS), to: isoDay(Date.now()) }))
  const report = useLoad(() => operator((client) => client.Revenue(period)), [period.from, period.to])
  const rows = report.data?.rows ?? []
  const byDay = new Map<string, number>()
  for (const row of rows) byDay.set(row.day, (byDay.get(row.day) ?? 0) + row.taskChargedMicros + row.chatChargedMicros)
  const totals = report.data?.totals
  return (
    <>
      <h1>Revenue</h1>
      <form
        aria-label="Period"
        onSubmit={(event) => {
          event.preventDefault()
          const form = new FormData(event.currentTarget)
          setPeriod({ from: String(form.get("from")), to: String(form.get("to")) })
        }}
      >
        <label class="field">
          <span>From (UTC day)</span>
          <input name="from" type="date" value={period.from} required />
        </label>
        <label class="field">
          <span>To (UTC day, included)</span>
          <input name="to" type="date" value={period.to} required />
        </label>
        <button type="submit">Show</button>
      </form>
      <ErrorNotice error={report.error} />
      {report.data?.truncated === true ? <Status>More lines than a report holds: narrow the period for the rest.</Status> : null}
      <section aria-labelledby="revenue-by-day">
        <h2 id="revenue-by-day">Charged by day</h2>
        <BarChart
          id="chart-revenue"
          title="Charged by day (UTC), tasks and chat"
          bars={[...byDay].map(([label, micros]) => ({ label, micros }))}
        />
      </section>
      <section aria-labelledby="revenue-table">
        <h2 id="revenue-table">By day and model</h2>
        {report.data !== undefined && rows.length === 0 ? (
          <Status>No charges, releases or settled chat requests in this period.</Status>
        ) : (
          <div class="scroll">
            <table>
              <caption class="visually-hidden">Revenue by UTC day and model</caption>
              <thead>
                <tr>
                  <th scope="col">Day</th>
                  <th scope="col">Model</th>
                  <NumberHeads
                    labels={[
                      "Tasks charged",
                      "Task charges",
                      "Tasks released",
                      "Released",
                      "Chat requests",
                      "Chat charges",
                      "Upstream cost",
                      "Shortfall"
                    ]}
                  />
                </tr>
              </thead>
              <tbody>
                {rows.map((row) => (
                  <tr key={`${row.day} ${row.model}`}>
                    <td class="nowrap">{row.day}</td>
                    <td>{row.model ?? "(task no longer stored)"}</td>
                    <td class="number">{row.tasksCharged}</td>
                    <td class="number">{usd(row.taskChargedMicros)}</td>
                    <td class="number">{row.tasksReleased}</td>
                    <td class="number">{usd(row.taskReleasedMicros)}</td>
                    <td class="number">{row.chatRequests}</td>
                    <td class="number">{usd(row.chatChargedMicros)}</td>
                    <td class="number">{usd(row.chatUpstreamCostMicros)}</td>
                    <td class="number">{usd(row.chatShortfallMicros)}</td>
                  </tr>
                ))}
              </tbody>
              {totals === undefined ? null : (
                <tfoot>
                  <tr>
                    <th scope="row" colSpan={2}>
                      Total
                    </th>
                    <td class="number">{totals.tasksCharged}</td>
                    <td class="number">{usd(totals.taskChargedMicros)}</td>
                    <td class="number">{totals.tasksReleased}</td>
                    <td class="number">{usd(totals.taskReleasedMicros)}</td>
                    <td class="number">{totals.chatRequests}</td>
                    <td class="number">{usd(totals.chatChargedMicros)}</td>
                    <td class="number">{usd(totals.chatUpstreamCostMicros)}</td>
                    <td class="number">{usd(totals.chatShortfallMicros)}</td>
                  </tr>
                </tfoot>
              )}
            </table>
          </div>
        )}
      </section>
      {totals === undefined ? null : (
        <p>
          Refunds: {totals.refunds}, {usd(totals.refundedMicros)}
          {report.data?.refunds.map((day) => ` · ${day.day}: ${day.refunds}, ${usd(day.refundedMicros)}`).join("")}
        </p>
      )}
    </>
  )
}
