/**
 * Account credits and their history: the balances and the ledger entries, newest first, a page
 * at a time (`limit`, and `before` = the previous page's `nextCursor`); and the spend summary, the
 * charges of a range of UTC days by day and by model (`from`, `to`: SpendRange).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Errors } from "@taskmeter/kernel"
import { parameterSchemas } from "./OpenApiParameters.ts"
import { Day, DEFAULT_SPEND_DAYS, MAX_SPEND_DAYS } from "./SpendRange.ts"
import { Authentication, requireScope } from "./Security.ts"

export const DEFAULT_PAGE_SIZE = 100
export const MAX_PAGE_SIZE = 100

const pageSizeRule = `must be an integer from 1 to ${MAX_PAGE_SIZE}`

export const PageSize = Schema.NumberFromString.annotate({ message: pageSizeRule }).check(
  Schema.isInt({ message: pageSizeRule }),
  Schema.isBetween({ minimum: 1, maximum: MAX_PAGE_SIZE }, { message: pageSizeRule })
)

export const LedgerEntry = Schema.Struct({
  id: Schema.String,
  kind: Schema.Literals(["grant", "reserve", "charge", "release", "refund", "adjustment"]).annotate({
    description:
      "grant: credits added; reserve: held for a task or chat request; charge: taken once it succeeded; " +
      "release: a reservation given back; refund: a payment refunded (or a dispute lost); adjustment: an operator correction, " +
      "or a payment dispute's hold (negative) and its release (may be negative). Entries made for a payment name it in their note."
  }),
  amountMicros: Schema.Int.annotate({ description: "USD micro-units; negative only for adjustments." }),
  taskId: Schema.NullOr(Schema.String),
  chatRequestId: Schema.NullOr(Schema.String),
  note: Schema.NullOr(Schema.String),
  createdAt: Schema.String.annotate({ format: "date-time" })
}).annotate({ identifier: "LedgerEntry" })
export type LedgerEntry = typeof LedgerEntry.Type

export const Usage = Schema.Struct({
  balanceMicros: Schema.Int.annotate({ description: "Credits on the account; below zero after an uncovered refund." }),
  reservedMicros: Schema.Int.annotate({ description: "Held for unfinished tasks and chat requests." }),
  availableMicros: Schema.Int.annotate({ description: "balanceMicros - reservedMicros: what new tasks can use." }),
  currency: Schema.Literal("USD"),
  paymentReview: Schema.Boolean.annotate({
    description: "True while a refund leaves the balance uncovered; submissions get PAYMENT_REVIEW_REQUIRED."
  }),
  entries: Schema.Array(LedgerEntry).annotate({ description: "Ledger entries, newest first." }),
  nextCursor: Schema.NullOr(Schema.String).annotate({
    description: "Pass as `before` for the next (older) page; null at the end."
  })
}).annotate({ identifier: "Usage" })
export type Usage = typeof Usage.Type

const spendFigures = {
  taskMicros: Schema.Int.annotate({ description: "Charged for tasks, USD micro-units." }),
  chatMicros: Schema.Int.annotate({ description: "Charged for chat requests, USD micro-units." }),
  totalMicros: Schema.Int.annotate({ description: "taskMicros + chatMicros." })
}

export const SpendDay = Schema.Struct({ day: Schema.String.annotate({ format: "date" }), ...spendFigures }).annotate({
  identifier: "SpendDay"
})

export const SpendModel = Schema.Struct({ model: Schema.String, ...spendFigures }).annotate({ identifier: "SpendModel" })

export const UsageSummary = Schema.Struct({
  from: Schema.String.annotate({ format: "date", description: "The first UTC day summed." }),
  to: Schema.String.annotate({ format: "date", description: "The last UTC day summed (included)." }),
  currency: Schema.Literal("USD"),
  ...spendFigures,
  days: Schema.Array(SpendDay).annotate({ description: "The days with a charge, oldest first." }),
  models: Schema.Array(SpendModel).annotate({ description: "The models with a charge, most spent first, then by name." })
}).annotate({
  identifier: "UsageSummary",
  description: "The caller's charges (ledger entries of kind charge) dated in a range of UTC days, by day and by model."
})
export type UsageSummary = typeof UsageSummary.Type

export const UsageApi = HttpApiGroup.make("usage")
  .add(
    HttpApiEndpoint.get("get", "/api/v1/usage", {
      query: {
        limit: Schema.optionalKey(PageSize),
        before: Schema.optionalKey(Schema.String.annotate({ description: "The nextCursor of the previous page." }))
      },
      success: Usage,
      error: [Errors.InvalidRequest, Errors.RequestNotFound, Errors.ApiUnavailable]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Credits and ledger",
          description: "Current balances and the ledger entries, newest first. An unknown or foreign cursor is REQUEST_NOT_FOUND."
        })
      )
      .annotateMerge(
        requireScope(
          "usage:read",
          parameterSchemas(
            { limit: PageSize },
            {
              limit: { default: DEFAULT_PAGE_SIZE, description: `Entries per page, 1 to ${MAX_PAGE_SIZE}.` }
            }
          )
        )
      )
  )
  .add(
    HttpApiEndpoint.get("summary", "/api/v1/usage/summary", {
      query: {
        from: Schema.optionalKey(Day.annotate({ description: "The first UTC day (YYYY-MM-DD)." })),
        to: Schema.optionalKey(Day.annotate({ description: "The last UTC day, included (YYYY-MM-DD)." }))
      },
      success: UsageSummary,
      error: [Errors.InvalidRequest, Errors.ApiUnavailable]
    })
      .annotateMerge(
        OpenApi.annotations({
          summary: "Spend by day and model",
          description:
            `The caller's charges for tasks and chat requests in the UTC days from..to (both included), by day and by model. ` +
            `to defaults to today, from to ${DEFAULT_SPEND_DAYS - 1} days before to; at most ${MAX_SPEND_DAYS} days, ` +
            `else INVALID_REQUEST. Read from a rollup kept with each charge: its cost does not grow with the ledger.`
        })
      )
      .annotateMerge(
        requireScope(
          "usage:read",
          parameterSchemas(
            { from: Day, to: Day },
            {
              from: {
                format: "date",
                description: `The first UTC day (YYYY-MM-DD); default: ${DEFAULT_SPEND_DAYS - 1} days before to.`
              },
              to: { format: "date", description: "The last UTC day, included (YYYY-MM-DD); default: today (UTC)." }
            }
          )
        )
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Description, "Account credits and history.")
