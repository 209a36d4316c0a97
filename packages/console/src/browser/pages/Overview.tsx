/**
 * Overview: balance, reserved and available (GET /api/v1/usage), and the spend of a period of UTC
 * days up to today (GET /api/v1/usage/summary, every charge of the period) by day and by model.
 * Amounts read as money: dollars and cents.
 */
import { Effect } from "effect"
import { useState } from "preact/hooks"
import { call } from "../api.ts"
import { BarChart } from "../parts/BarChart.tsx"
import { ErrorNotice, Status } from "../parts/Notice.tsx"
import { money } from "../format.ts"
import { useLoad } from "../useLoad.ts"

const DAY_MS = 86_400_000
const isoDay = (at: number) => new Date(at).toISOString().slice(0, 10)

/** The periods offered, in days up to today; the API takes at most 366. */
const PERIODS: ReadonlyArray<readonly [number, string]> = [
  [7, "Last 7 days"],
  [30, "Last 30 days"],
  [90, "Last 90 days"],
  [366, "Last 12 months"]
]

const load = (days: number) =>
  call(({ api }) =>
    Effect.all({
      usage: api.usage.get({ query: { limit: 1 } }),
      spend: api.usage.summary({ query: { from: isoDay(Date.now() - (days - 1) * DAY_MS), to: isoDay(Date.now()) } })
    })
  )

export const Overview = () => {
  const [days, setDays] = useState(30)
  const { data, error } = useLoad(() => load(days), [days])
  if (data === undefined) return error === undefined ? <Status>Loading…</Status> : <ErrorNotice error={error} />
  const { usage, spend } = data
  return (
    <>
      <h1>Overview</h1>
      <ErrorNotice error={error} />
      <dl class="balances">
        <div>
          <dt>Balance</dt>
          <dd>{money(usage.balanceMicros)}</dd>
        </div>
        <div>
          <dt>Reserved</dt>
          <dd>{money(usage.reservedMicros)}</dd>
        </div>
        <div>
          <dt>Available</dt>
          <dd>{money(usage.availableMicros)}</dd>
        </div>
      </dl>
      {usage.paymentReview ? (
        <p class="notice error">A refund left the balance uncovered: new tasks are refused until it is settled.</p>
      ) : null}
      <label class="field period">
        <span>Spend over</span>
        <select value={String(days)} onChange={(event) => setDays(Number(event.currentTarget.value))}>
          {PERIODS.map(([value, label]) => (
            <option key={value} value={String(value)}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <p class="hint" id="spend-total">
        {`${money(spend.totalMicros)} spent from ${spend.from} to ${spend.to} (UTC): ${money(spend.taskMicros)} on tasks, ${money(spend.chatMicros)} on chat.`}
      </p>
      <section aria-labelledby="by-day">
        <h2 id="by-day">Spend by day</h2>
        <BarChart
          id="chart-day"
          title="Spend by day (UTC)"
          bars={spend.days.map((line) => ({ label: line.day, micros: line.totalMicros }))}
        />
      </section>
      <section aria-labelledby="by-model">
        <h2 id="by-model">Spend by model</h2>
        <BarChart
          id="chart-model"
          title="Spend by model"
          bars={spend.models.map((line) => ({ label: line.model, micros: line.totalMicros }))}
        />
      </section>
    </>
  )
}
