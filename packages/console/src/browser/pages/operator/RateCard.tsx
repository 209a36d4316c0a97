/**
 * A task model's rate card on the operator's Prices page: its rules in words, and an editor of
 * them as the price list holds them (`when` as JSON, the price in USD, an optional quantity field
 * and settlement), turned into rules or into the operator's mistakes, one sentence each. Whether
 * the rules fit the model (fields, values, exactly one rule per input) is the admin service's
 * check, made on the whole list before anything applies.
 */
import { Result, Schema } from "effect"
import { Money, PriceList } from "@taskmeter/kernel"
import { usd, usdInput } from "../../format.ts"

/** One rule as typed. */
export interface RuleDraft {
  readonly when: string
  readonly price: string
  readonly quantityField: string
  readonly settlement: PriceList.Settlement
}

export const emptyRule: RuleDraft = { when: "{}", price: "", quantityField: "", settlement: "fixed" }

export const draftsOf = (rules: ReadonlyArray<PriceList.Rule>): ReadonlyArray<RuleDraft> =>
  rules.map((rule) => ({
    when: JSON.stringify(rule.when),
    price: usdInput(rule.priceMicros),
    quantityField: rule.quantityField ?? "",
    settlement: rule.settlement ?? "fixed"
  }))

const decodeCondition = Schema.decodeUnknownResult(PriceList.Condition)

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The rules the drafts stand for, or what the operator must fix. */
export const rulesOf = (
  drafts: ReadonlyArray<RuleDraft>
): Result.Result<ReadonlyArray<PriceList.Rule>, ReadonlyArray<string>> => {
  if (drafts.length === 0) return Result.fail(["A rate card needs at least one rule."])
  const problems: Array<string> = []
  const rules = drafts.flatMap((draft, i): ReadonlyArray<PriceList.Rule> => {
    const at = `Rule ${i + 1}`
    const when = decodeCondition(parseJson(draft.when))
    const priceMicros = Money.parseUsd(draft.price)
    if (Result.isFailure(when)) {
      problems.push(
        `${at}: "when" must be a JSON object of field names to a value or a list of values, such as {"resolution": ["1k", "2k"]}; {} matches every input.`
      )
    }
    if (priceMicros === undefined) {
      problems.push(`${at}: the price "${draft.price}" is not an amount in USD with at most six decimals, such as 0.08.`)
    }
    const quantityField = draft.quantityField.trim()
    if (draft.settlement === "perDeliveredUnit" && quantityField === "") {
      problems.push(`${at}: charging per delivered unit needs a quantity field, which counts the units.`)
    }
    if (Result.isFailure(when) || priceMicros === undefined) return []
    return [
      {
        when: when.success,
        priceMicros,
        ...(quantityField === "" ? {} : { quantityField }),
        ...(draft.settlement === "fixed" ? {} : { settlement: draft.settlement })
      }
    ]
  })
  return problems.length > 0 ? Result.fail(problems) : Result.succeed(rules)
}

const conditionText = (when: PriceList.Condition): string => {
  const parts = Object.entries(when).map(([field, value]) =>
    Array.isArray(value)
      ? `${field} is ${value.map((v) => JSON.stringify(v)).join(" or ")}`
      : `${field} is ${JSON.stringify(value)}`
  )
  return parts.length === 0 ? "any input" : parts.join(" and ")
}

/** A rule in words: "resolution is "4k": $0.15 × duration, per delivered unit". */
export const ruleText = (rule: PriceList.Rule): string =>
  `${conditionText(rule.when)}: ${usd(rule.priceMicros)}` +
  (rule.quantityField === undefined ? "" : ` × ${rule.quantityField}`) +
  (rule.settlement === "perDeliveredUnit" ? ", charged per delivered unit" : "")

/** The editor of a rate card's rules: one fieldset per rule, with a button to add and to remove one. */
export const RateCardEditor = (props: {
  readonly drafts: ReadonlyArray<RuleDraft>
  readonly onChange: (drafts: ReadonlyArray<RuleDraft>) => void
}) => {
  const change = (index: number, part: Partial<RuleDraft>) =>
    props.onChange(props.drafts.map((draft, i) => (i === index ? { ...draft, ...part } : draft)))
  return (
    <>
      {props.drafts.map((draft, i) => (
        <fieldset key={i}>
          <legend>Rule {i + 1}</legend>
          <label class="field">
            <span>When (JSON: field to value or list of values; {"{}"} matches every input)</span>
            <input value={draft.when} spellcheck={false} onInput={(event) => change(i, { when: event.currentTarget.value })} />
          </label>
          <label class="field">
            <span>Price (USD, per unit with a quantity field)</span>
            <input value={draft.price} inputMode="decimal" onInput={(event) => change(i, { price: event.currentTarget.value })} />
          </label>
          <label class="field">
            <span>Quantity field (optional, such as duration)</span>
            <input
              value={draft.quantityField}
              spellcheck={false}
              onInput={(event) => change(i, { quantityField: event.currentTarget.value })}
            />
          </label>
          <label class="field">
            <span>Settlement</span>
            <select
              value={draft.settlement}
              onChange={(event) => change(i, { settlement: event.currentTarget.value as PriceList.Settlement })}
            >
              <option value="fixed">fixed: the quote is charged</option>
              <option value="perDeliveredUnit">per delivered unit</option>
            </select>
          </label>
          <button type="button" class="secondary" onClick={() => props.onChange(props.drafts.filter((_, j) => j !== i))}>
            Remove rule {i + 1}
          </button>
        </fieldset>
      ))}
      <button type="button" class="secondary" onClick={() => props.onChange([...props.drafts, emptyRule])}>
        Add a rule
      </button>
    </>
  )
}
