/**
 * The operator's price list (`{ models: { <slug>: { enabled, priceMicros | rateCard,
 * dailyBudgetMicros? } } }`, shipped defaults in `prices/default-prices.json`): its schema, the
 * `when` rule language, and the load-time check against the Catalog that refuses a whole list with
 * `PriceListInvalid` naming every problem. `toPublic` is the view without budgets. The rules:
 * docs/decisions.md, Prices; the format by example: packages/kernel/prices/README.md.
 */
import { Effect, Result, Schema } from "effect"
import { decodeAll } from "../domain/internal/SchemaProblems.ts"
import type { ModelInput } from "../catalog/ModelDefinition.ts"
import type { FieldInfo } from "../catalog/ModelField.ts"
import { Micros, micros } from "../domain/Money.ts"
import * as ProblemList from "../domain/ProblemList.ts"

/** A value in a `when` condition; `null` means "field omitted". */
export const ConditionValue = Schema.Union([Schema.String, Schema.Finite, Schema.Null])
export type ConditionValue = typeof ConditionValue.Type

/** Field name -> the value it must have, or a non-empty list of values it may have. */
export const Condition = Schema.Record(
  Schema.String,
  Schema.Union([ConditionValue, Schema.Array(ConditionValue).check(Schema.isMinLength(1))])
).annotate({ description: "Field name -> required value, or list of allowed values; ANDed. {} matches every input." })
export type Condition = typeof Condition.Type

/** How a task priced by a rule is finally charged. */
export const Settlement = Schema.Literals(["fixed", "perDeliveredUnit"]).annotate({
  description: "fixed: the quote is charged. perDeliveredUnit: only the units actually delivered are charged."
})
export type Settlement = typeof Settlement.Type

export const Rule = Schema.Struct({
  when: Condition,
  priceMicros: Micros,
  quantityField: Schema.optionalKey(
    Schema.String.annotate({ description: "Input field whose whole-number value multiplies priceMicros." })
  ),
  settlement: Schema.optionalKey(Settlement)
}).annotate({ identifier: "PriceRule" })
export type Rule = typeof Rule.Type

const budgetRule = "must be a whole number of USD micro-units from 1 to 9007199254740991"

/** A model's daily platform budget: a positive amount, in USD micro-units. */
export const DailyBudget = Schema.Int.annotate({ message: budgetRule })
  .check(Schema.isGreaterThanOrEqualTo(1, { message: budgetRule }))
  .pipe(Schema.brand("Micros"))
  .annotate({
    description:
      "The most the platform admits for the model per UTC day, summed over the prices of its tasks " +
      "across all accounts; past it submissions are PLATFORM_BUDGET_EXCEEDED until 00:00 UTC."
  })

export const ModelPrice = Schema.Struct({
  enabled: Schema.Boolean,
  priceMicros: Schema.optionalKey(Micros),
  rateCard: Schema.optionalKey(Schema.Array(Rule).check(Schema.isMinLength(1))),
  dailyBudgetMicros: Schema.optionalKey(DailyBudget)
}).annotate({ identifier: "ModelPrice" })
export type ModelPrice = typeof ModelPrice.Type

export const PriceList = Schema.Struct({
  models: Schema.Record(Schema.String, ModelPrice)
}).annotate({ identifier: "PriceList" })
export type PriceList = typeof PriceList.Type

/**
 * A price list that cannot be used, with every problem found, each prefixed by where it is; its
 * message lists the first ProblemList.MAX_LISTED of them.
 */
export class PriceListInvalid extends Schema.TaggedError<PriceListInvalid>()("PriceListInvalid", {
  problems: Schema.Array(Schema.String)
}) {
  override get message(): string {
    const listed = this.problems.slice(0, ProblemList.MAX_LISTED)
    const more = this.problems.length - listed.length
    return `The price list is invalid:\n- ${listed.join("\n- ")}${more > 0 ? `\n- and ${more} more` : ""}`
  }
}

/** The part of a Catalog field definition that pricing reads. */
export type PricedField = Pick<FieldInfo, "name" | "type" | "required" | "options" | "default" | "minimum" | "maximum">

/** The part of a Catalog model definition that pricing reads. */
export interface PricedModel {
  readonly slug: string
  readonly fields: ReadonlyArray<PricedField>
}

/** The largest integer range a `when` may enumerate, and the most combinations checked per model. */
const MAX_RANGE = 1_000
const MAX_COMBINATIONS = 100_000
/** How many failing combinations a problem spells out before summarising the rest. */
const SHOWN_COMBINATIONS = 3

/** A field's value as `when` sees it: an omitted field is `null`. */
const valueOf = (input: ModelInput, field: string): unknown => input[field] ?? null

/** Whether a rule's `when` holds for a defaulted input. */
export const matches = (when: Condition, input: ModelInput): boolean =>
  Object.entries(when).every(([field, condition]) => {
    const value = valueOf(input, field)
    return Array.isArray(condition) ? condition.includes(value) : condition === value
  })

const WHOLE_NUMBER = /^[1-9][0-9]*$/

/**
 * The whole number a quantity field's value stands for (numImages "3" -> 3, duration 6 -> 6),
 * or undefined when it is not a safe whole number of at least 1.
 */
export const quantityOf = (value: unknown): number | undefined => {
  const n = typeof value === "string" && WHOLE_NUMBER.test(value) ? Number(value) : value
  return typeof n === "number" && Number.isSafeInteger(n) && n >= 1 ? n : undefined
}

/** An optional field without a default is the only kind that can be missing from a defaulted input. */
const canBeOmitted = (field: PricedField): boolean => !field.required && field.default === undefined

/** Every value a field can have after validation and defaults, or why that set is not finite and small. */
const valueSpace = (field: PricedField): Result.Result<ReadonlyArray<ConditionValue>, string> => {
  const omitted = canBeOmitted(field) ? [null] : []
  if (field.options !== undefined) return Result.succeed([...field.options, ...omitted])
  const { minimum, maximum } = field
  if (field.type === "integer" && minimum !== undefined && maximum !== undefined && maximum - minimum < MAX_RANGE) {
    return Result.succeed([...Array.from({ length: maximum - minimum + 1 }, (_, i) => minimum + i), ...omitted])
  }
  return Result.fail(`"${field.name}" has no finite set of values (no options, no integer range) and cannot be tested`)
}

const show = (value: unknown): string => (value === null ? "omitted" : JSON.stringify(value))

/** The largest quantity a quantity field can hold, or why the field cannot be a quantity. */
const largestQuantity = (field: PricedField): Result.Result<number, string> => {
  const notQuantity = `quantityField "${field.name}" must always hold a whole number of at least 1`
  if (canBeOmitted(field)) return Result.fail(`${notQuantity}, but it is optional without a default`)
  if (field.options !== undefined) {
    const quantities = field.options.map(quantityOf)
    const bad = field.options.find((_, i) => quantities[i] === undefined)
    if (bad !== undefined) return Result.fail(`${notQuantity}; its option ${show(bad)} is not one`)
    return Result.succeed(Math.max(...(quantities as ReadonlyArray<number>)))
  }
  if (field.type === "integer" && field.minimum !== undefined && field.minimum >= 1 && field.maximum !== undefined) {
    return Result.succeed(field.maximum)
  }
  return Result.fail(`${notQuantity} with a stated maximum; it is a ${field.type} without such bounds`)
}

const checkRule = (model: PricedModel, rule: Rule, at: string): Array<string> => {
  const problems: Array<string> = []
  const fieldNamed = (name: string) => model.fields.find((field) => field.name === name)
  for (const [name, condition] of Object.entries(rule.when)) {
    const field = fieldNamed(name)
    if (field === undefined) {
      problems.push(`${at}.when.${name}: model ${model.slug} has no field "${name}"`)
      continue
    }
    const space = valueSpace(field)
    if (Result.isFailure(space)) {
      problems.push(`${at}.when.${name}: ${space.failure}`)
      continue
    }
    for (const value of Array.isArray(condition) ? condition : [condition]) {
      if (!space.success.includes(value)) {
        problems.push(
          `${at}.when.${name}: ${show(value)} never occurs; "${name}" is one of ${space.success.map(show).join(", ")}`
        )
      }
    }
  }
  if (rule.quantityField === undefined) {
    if (rule.settlement === "perDeliveredUnit") {
      problems.push(`${at}.settlement: "perDeliveredUnit" needs a quantityField, which counts the units`)
    }
    return problems
  }
  const field = fieldNamed(rule.quantityField)
  if (field === undefined) {
    problems.push(`${at}.quantityField: model ${model.slug} has no field "${rule.quantityField}"`)
    return problems
  }
  const largest = largestQuantity(field)
  if (Result.isFailure(largest)) {
    problems.push(`${at}.quantityField: ${largest.failure}`)
  } else if (!Number.isSafeInteger(rule.priceMicros * largest.success)) {
    problems.push(`${at}.priceMicros: ${rule.priceMicros} × ${largest.success} ${field.name} exceeds the largest safe amount`)
  }
  return problems
}

const describeCombination = (fields: ReadonlyArray<string>, values: ReadonlyArray<ConditionValue>): string =>
  fields.map((field, i) => `${field} ${show(values[i])}`).join(", ") || "every input"

const summarise = (found: ReadonlyArray<string>): string =>
  found.slice(0, SHOWN_COMBINATIONS).join("; ") +
  (found.length > SHOWN_COMBINATIONS ? `; and ${found.length - SHOWN_COMBINATIONS} more combinations` : "")

/** Exactly one rule for every combination of values of the fields the rules test. */
const checkCoverage = (model: PricedModel, rateCard: ReadonlyArray<Rule>, at: string): Array<string> => {
  const fields = [...new Set(rateCard.flatMap((rule) => Object.keys(rule.when)))]
  const spaces = fields.map((name) => {
    const field = model.fields.find((f) => f.name === name)
    return field === undefined ? [] : Result.getOrElse(valueSpace(field), () => [])
  })
  const combinations = spaces.reduce((count, space) => count * space.length, 1)
  if (combinations > MAX_COMBINATIONS) {
    return [
      `${at}: the fields tested (${fields.join(", ")}) have ${combinations} combinations, more than ${MAX_COMBINATIONS} can be checked`
    ]
  }
  const unmatched: Array<string> = []
  const overlapping: Array<string> = []
  for (let index = 0; index < combinations; index++) {
    let rest = index
    const values = spaces.map((space) => {
      const value = space[rest % space.length]
      rest = Math.floor(rest / space.length)
      return value
    })
    const input = Object.fromEntries(fields.map((field, i) => [field, values[i]]))
    const matching = rateCard.flatMap((rule, i) => (matches(rule.when, input) ? [i] : []))
    if (matching.length === 0) unmatched.push(describeCombination(fields, values))
    if (matching.length > 1) {
      overlapping.push(`rules ${matching.join(" and ")} all match ${describeCombination(fields, values)}`)
    }
  }
  return [
    ...(unmatched.length > 0 ? [`${at}: no rule matches ${summarise(unmatched)}`] : []),
    ...(overlapping.length > 0 ? [`${at}: more than one rule matches: ${summarise(overlapping)}`] : [])
  ]
}

/** Every way a decoded price list disagrees with the Catalog's models; empty when it is usable. */
export const problems = (list: PriceList, models: ReadonlyArray<PricedModel>): ReadonlyArray<string> =>
  Object.entries(list.models).flatMap(([slug, entry]) => {
    const at = `models.${slug}`
    const model = models.find((m) => m.slug === slug)
    if (model === undefined) return [`${at}: no model has this slug`]
    if (entry.rateCard === undefined) return []
    if (entry.priceMicros !== undefined) {
      return [`${at}: give priceMicros or rateCard, not both (with a rateCard, priceMicros is never used)`]
    }
    const ruleProblems = entry.rateCard.flatMap((rule, i) => checkRule(model, rule, `${at}.rateCard[${i}]`))
    return ruleProblems.length > 0 ? ruleProblems : checkCoverage(model, entry.rateCard, `${at}.rateCard`)
  })

const decodeList = decodeAll(PriceList, "price list")

/**
 * One model as GET /api/v1/prices shows it. `enabled` says whether a task can be submitted now
 * (listed, enabled and priced). `priceMicros` is the flat price, or with a rate card the lowest
 * price the card can quote (a "from" price), null when the model has no price; the rate card
 * itself is shown so a client can compute the exact price by the spec's rule.
 */
export const PublicPrice = Schema.Struct({
  model: Schema.String,
  enabled: Schema.Boolean,
  currency: Schema.Literal("USD"),
  priceMicros: Schema.NullOr(Micros),
  rateCard: Schema.optionalKey(Schema.Array(Rule))
}).annotate({ identifier: "ModelPriceView" })
export type PublicPrice = typeof PublicPrice.Type

/** The body of GET /api/v1/prices: every Catalog model, in Catalog order. */
export const PublicPrices = Schema.Struct({ models: Schema.Array(PublicPrice) }).annotate({ identifier: "Prices" })
export type PublicPrices = typeof PublicPrices.Type

/** The smallest amount a rule can quote: its price times the smallest quantity its `when` lets through. */
const lowestOf = (model: PricedModel, rule: Rule): number => {
  const field = model.fields.find((f) => f.name === rule.quantityField)
  if (field === undefined) return rule.priceMicros
  const condition = rule.when[field.name]
  const allowed = condition === undefined ? undefined : Array.isArray(condition) ? condition : [condition]
  const quantities = Result.getOrElse(valueSpace(field), () => [])
    .filter((value) => allowed === undefined || allowed.includes(value))
    .flatMap((value) => quantityOf(value) ?? [])
  return rule.priceMicros * Math.min(...quantities)
}

/** The public view of a loaded price list: what GET /api/v1/prices returns. */
export const toPublic = (list: PriceList, models: ReadonlyArray<PricedModel>): PublicPrices => ({
  models: models.map((model): PublicPrice => {
    const entry = list.models[model.slug]
    const lowest =
      entry?.rateCard === undefined ? entry?.priceMicros : Math.min(...entry.rateCard.map((rule) => lowestOf(model, rule)))
    return {
      model: model.slug,
      enabled: entry !== undefined && entry.enabled && lowest !== undefined,
      currency: "USD",
      priceMicros: lowest === undefined ? null : micros(lowest),
      ...(entry?.rateCard === undefined ? {} : { rateCard: entry.rateCard })
    }
  })
})

/** Decodes raw JSON data into a price list (every schema problem reported), without the Catalog checks. */
export const decode = (raw: unknown): Result.Result<PriceList, PriceListInvalid> =>
  Result.mapError(decodeList(raw), (problems) => new PriceListInvalid({ problems }))

/**
 * The list without the entries of models not in `models`, and their slugs. A list saved by
 * another release may price models this one no longer has: they cannot be submitted here
 * anyway, and must not keep the rest of the list from being quoted.
 */
export const withoutUnknownModels = (
  list: PriceList,
  models: ReadonlyArray<PricedModel>
): { readonly list: PriceList; readonly unknown: ReadonlyArray<string> } => {
  const known = new Set(models.map((model) => model.slug))
  const unknown = Object.keys(list.models).filter((slug) => !known.has(slug))
  return unknown.length === 0
    ? { list, unknown }
    : { list: { models: Object.fromEntries(Object.entries(list.models).filter(([slug]) => known.has(slug))) }, unknown }
}

/** Decodes raw JSON data and checks it against the Catalog's models: a price list ready to quote from. */
export const load = (raw: unknown, models: ReadonlyArray<PricedModel>): Effect.Effect<PriceList, PriceListInvalid> =>
  Effect.flatMap(Effect.fromResult(decode(raw)), (list) => {
    const found = problems(list, models)
    return found.length === 0 ? Effect.succeed(list) : Effect.fail(new PriceListInvalid({ problems: found }))
  })
