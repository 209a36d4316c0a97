/**
 * Operator › Prices: the price list (each model's state, flat price or rate card, daily budget),
 * and as the CLI's price commands do: set a model's flat price (enabling it), set or remove its
 * daily budget, disable it (AdminRpc's PriceSet and PriceDisable; the whole list is checked first).
 */
import { useState } from "preact/hooks"
import { Money } from "@taskmeter/kernel"
import { usd } from "../../format.ts"
import { operator } from "../../operator.ts"
import { ErrorNotice, Status } from "../../parts/Notice.tsx"
import { useLoad } from "../../useLoad.ts"
import { microsOf } from "./Accounts.tsx"

export const OperatorPrices = () => {
  const list = useLoad(() => operator((client) => client.PriceList()))
  const [error, setError] = useState<unknown>(undefined)
  const [done, setDone] = useState<string | undefined>(undefined)
  const models = Object.entries(list.data?.models ?? {}).sort(([a], [b]) => a.localeCompare(b))
  const act = async (what: string, run: () => Promise<unknown>) => {
    setDone(undefined)
    setError(undefined)
    try {
      await run()
      setDone(what)
      list.reload()
    } catch (failure) {
      setError(failure)
    }
  }
  return (
    <>
      <h1>Prices</h1>
      <ErrorNotice error={list.error} />
      <form
        aria-label="Set a price or budget"
        onSubmit={(event) => {
          event.preventDefault()
          const form = new FormData(event.currentTarget)
          const model = String(form.get("model"))
          const price = String(form.get("price")).trim()
          const budget = String(form.get("budget")).trim()
          const priceMicros = price === "" ? undefined : microsOf(price)
          const budgetMicros = budget === "" ? undefined : budget === "none" ? null : microsOf(budget)
          if (Number.isNaN(priceMicros) || Number.isNaN(budgetMicros)) {
            return setError(new Error("Enter amounts in dollars, such as 0.04; a budget of none removes it."))
          }
          if (priceMicros === undefined && budgetMicros === undefined) {
            return setError(new Error("Enter a price, a daily budget, or both."))
          }
          void act(`${model} updated.`, () =>
            operator((client) =>
              client.PriceSet({
                model,
                ...(priceMicros === undefined ? {} : { entry: { enabled: true, priceMicros: Money.micros(priceMicros) } }),
                ...(budgetMicros === undefined ? {} : { dailyBudgetMicros: budgetMicros === null ? null : Money.micros(budgetMicros) })
              })
            )
          )
        }}
      >
        <label class="field">
          <span>Model</span>
          <select name="model">
            {models.map(([model]) => (
              <option key={model} value={model}>
                {model}
              </option>
            ))}
          </select>
        </label>
        <label class="field">
          <span>Flat price (USD)</span>
          <input name="price" inputMode="decimal" />
        </label>
        <label class="field">
          <span>Daily budget (USD, or none)</span>
          <input name="budget" />
        </label>
        <button type="submit">Set</button>
      </form>
      <ErrorNotice error={error} />
      {done === undefined ? null : <Status>{done}</Status>}
      <table>
        <caption>The price list</caption>
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col">State</th>
            <th scope="col">Price</th>
            <th scope="col">Daily budget</th>
            <th scope="col">Action</th>
          </tr>
        </thead>
        <tbody>
          {models.map(([model, entry]) => (
            <tr key={model}>
              <td>
                <code>{model}</code>
              </td>
              <td>{entry.enabled ? "enabled" : "disabled"}</td>
              <td>
                {entry.priceMicros !== undefined
                  ? usd(entry.priceMicros)
                  : entry.rateCard !== undefined
                    ? `rate card (${entry.rateCard.length} rules)`
                    : "none"}
              </td>
              <td>{entry.dailyBudgetMicros === undefined ? "none" : usd(entry.dailyBudgetMicros)}</td>
              <td>
                {entry.enabled ? (
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Disable ${model}`}
                    onClick={() => act(`${model} disabled.`, () => operator((client) => client.PriceDisable({ model })))}
                  >
                    Disable
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  )
}
