/**
 * The human form of `taskmeter admin revenue`: one aligned line per UTC day and model (amounts in
 * USD), then refunds per day and the totals.
 */
import { Money } from "@taskmeter/kernel"
import type { Revenue } from "./AdminRpc.ts"

const HEAD = [
  "day",
  "model",
  "tasks",
  "task charged",
  "released",
  "released USD",
  "chats",
  "chat charged",
  "upstream cost",
  "shortfall"
]

const figures = (row: Omit<Revenue["totals"], "refunds" | "refundedMicros">): ReadonlyArray<string> => [
  String(row.tasksCharged),
  Money.formatUsd(row.taskChargedMicros),
  String(row.tasksReleased),
  Money.formatUsd(row.taskReleasedMicros),
  String(row.chatRequests),
  Money.formatUsd(row.chatChargedMicros),
  Money.formatUsd(row.chatUpstreamCostMicros),
  Money.formatUsd(row.chatShortfallMicros)
]

/** Columns padded to their widest cell: text left, numbers right. */
const align = (lines: ReadonlyArray<ReadonlyArray<string>>): ReadonlyArray<string> => {
  const widths = HEAD.map((_, i) => Math.max(...lines.map((line) => line[i]?.length ?? 0)))
  return lines.map((line) =>
    line
      .map((cell, i) => (i < 2 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join("  ")
      .trimEnd()
  )
}

export const render = (report: Revenue): string =>
  [
    `Revenue from ${report.from} to ${report.to} (UTC days, amounts in USD):`,
    ...(report.rows.length === 0
      ? ["no charges, releases or settled chat requests."]
      : align([
          HEAD,
          ...report.rows.map((row) => [row.day, row.model ?? "(task no longer stored)", ...figures(row)]),
          ["total", "", ...figures(report.totals)]
        ])),
    ...(report.truncated ? ["(more lines than a report holds: narrow the period for the rest)"] : []),
    ...report.refunds.map((day) => `refunds ${day.day}: ${day.refunds}, ${Money.formatUsd(day.refundedMicros)} USD`),
    `refunds in total: ${report.totals.refunds}, ${Money.formatUsd(report.totals.refundedMicros)} USD`
  ].join("\n")
