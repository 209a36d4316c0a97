/**
 * Operator › Prices: the task price list (each model's state, flat price or rate card in words,
 * daily budget), and as the CLI's `price set|disable` do: set a model's price as a flat amount or
 * as a rate card (enabling it), set or remove its daily budget, disable it (AdminRpc's PriceSet
 * and PriceDisable). Mistakes in the form are named before anything is sent; the admin service
 * checks the whole list against the catalog and answers what does not fit, shown as it says it.
 */
import { Result } from "effect"
import { useState } from "preact/hooks"
import { Money, type PriceList } from "@taskmeter/kernel"
import { usd } from "../../format.ts"
import { operator } from "../../operator.ts"
import { ErrorNotice, Status } from "../../parts/Notice.tsx"
import { useLoad } from "../../useLoad.ts"
import { draftsOf, emptyRule, RateCardEditor, type RuleDraft, ruleText, rulesOf } from "./RateCard.tsx"

type Shape = "keep" | "flat" | "rateCard"

/** Mistakes in the form, as one message. */
class FormProblems extends Error {}

/** The budget as typed: none (undefined), removed (null), an amount, or a mistake. */
const budgetOf = (text: string): Money.Micros | null | undefined | FormProblems => {
  const typed = text.trim()
  if (typed === "") return undefined
  if (typed === "none") return null
  const amount = Money.parseUsd(typed)
  return amount !== undefined && amount > 0
    ? amount
    : new FormProblems(`The daily budget "${typed}" is neither an amount in USD above 0, such as 100 or 2.50, nor none.`)
}

/** The entry the form sets, nothing (the price stays), or the mistakes. */
const entryOf = (
  shape: Shape,
  flat: string,
  drafts: ReadonlyArray<RuleDraft>
): PriceList.ModelPrice | undefined | FormProblems => {
  if (shape === "keep") return undefined
  if (shape === "flat") {
    const priceMicros = Money.parseUsd(flat)
    return priceMicros === undefined
      ? new FormProblems(`The flat price "${flat}" is not an amount in USD with at most six decimals, such as 0.04.`)
      : { enabled: true, priceMicros }
  }
  const rules = rulesOf(drafts)
  return Result.isFailure(rules) ? new FormProblems(rules.failure.join(" ")) : { enabled: true, rateCard: rules.success }
}

const PriceCell = (props: { readonly entry: PriceList.ModelPrice }) =>
  props.entry.rateCard !== undefined ? (
    <ul aria-label="Rate card">
      {props.entry.rateCard.map((rule, i) => (
        <li key={i}>{ruleText(rule)}</li>
      ))}
    </ul>
  ) : (
    <>{props.entry.priceMicros === undefined ? "none" : usd(props.entry.priceMicros)}</>
  )

export const OperatorPrices = () => {
  const list = useLoad(() => operator((client) => client.PriceList()))
  const [error, setError] = useState<unknown>(undefined)
  const [done, setDone] = useState<string | undefined>(undefined)
  const models = Object.entries(list.data?.models ?? {}).sort(([a], [b]) => a.localeCompare(b))
  const [model, setModel] = useState<string | undefined>(undefined)
  const [shape, setShape] = useState<Shape>("keep")
  const [flat, setFlat] = useState("")
  const [drafts, setDrafts] = useState<ReadonlyArray<RuleDraft>>([emptyRule])
  const [budget, setBudget] = useState("")
  const chosen = model ?? models[0]?.[0]
  const current = chosen === undefined ? undefined : list.data?.models[chosen]
  /** The editor starts from the model's rate card in force, if it has one. */
  const startFrom = (slug: string | undefined) => {
    const card = slug === undefined ? undefined : list.data?.models[slug]?.rateCard
    setDrafts(card === undefined ? [emptyRule] : draftsOf(card))
  }
  const choose = (next: string) => {
    setModel(next)
    startFrom(next)
  }
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
          if (chosen === undefined) return
          const entry = entryOf(shape, flat, drafts)
          const dailyBudgetMicros = budgetOf(budget)
          const problems = [entry, dailyBudgetMicros].filter((part) => part instanceof FormProblems)
          if (problems.length > 0) return setError(new FormProblems(problems.map((p) => p.message).join(" ")))
          if (entry === undefined && dailyBudgetMicros === undefined) {
            return setError(new FormProblems("Set a flat price or a rate card, a daily budget, or both."))
          }
          void act(`${chosen} updated; new submissions use it from now on.`, () =>
            operator((client) =>
              client.PriceSet({
                model: chosen,
                ...(entry instanceof FormProblems || entry === undefined ? {} : { entry }),
                ...(dailyBudgetMicros instanceof FormProblems || dailyBudgetMicros === undefined ? {} : { dailyBudgetMicros })
              })
            )
          )
        }}
      >
        <label class="field">
          <span>Model</span>
          <select name="model" value={chosen} onChange={(event) => choose(event.currentTarget.value)}>
            {models.map(([slug]) => (
              <option key={slug} value={slug}>
                {slug}
              </option>
            ))}
          </select>
        </label>
        <fieldset>
          <legend>Price</legend>
          {(
            [
              ["keep", "Keep the price as it is"],
              ["flat", "A flat price per task"],
              ["rateCard", "A rate card: a price by input"]
            ] as const
          ).map(([value, label]) => (
            <label class="check" key={value}>
              <input
                type="radio"
                name="shape"
                value={value}
                checked={shape === value}
                onChange={() => {
                  setShape(value)
                  if (value === "rateCard") startFrom(chosen)
                }}
              />
              {label}
            </label>
          ))}
          {shape === "flat" ? (
            <label class="field">
              <span>Flat price (USD)</span>
              <input
                name="price"
                inputMode="decimal"
                value={flat}
                placeholder={current?.priceMicros === undefined ? "" : usd(current.priceMicros).slice(1)}
                onInput={(event) => setFlat(event.currentTarget.value)}
              />
            </label>
          ) : null}
          {shape === "rateCard" ? <RateCardEditor drafts={drafts} onChange={setDrafts} /> : null}
        </fieldset>
        <label class="field">
          <span>Daily budget (USD, or none)</span>
          <input name="budget" value={budget} onInput={(event) => setBudget(event.currentTarget.value)} />
        </label>
        <button type="submit">Set</button>
      </form>
      <ErrorNotice error={error} />
      {done === undefined ? null : <Status>{done}</Status>}
      <div class="scroll">
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
            {models.map(([slug, entry]) => (
              <tr key={slug}>
                <td>
                  <code>{slug}</code>
                </td>
                <td>{entry.enabled ? "enabled" : "disabled"}</td>
                <td>
                  <PriceCell entry={entry} />
                </td>
                <td>{entry.dailyBudgetMicros === undefined ? "none" : usd(entry.dailyBudgetMicros)}</td>
                <td>
                  {entry.enabled ? (
                    <button
                      type="button"
                      class="secondary"
                      aria-label={`Disable ${slug}`}
                      onClick={() =>
                        act(`${slug} disabled: submissions are refused until its price is set again.`, () =>
                          operator((client) => client.PriceDisable({ model: slug }))
                        )
                      }
                    >
                      Disable
                    </button>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  )
}
