/**
 * The process's log lines: one JSON object per line with LOG_FORMAT=json (timestamp, level,
 * message, the annotations flattened — requestId, taskId... — and the trace and span ids when a
 * span is sampled), else logfmt lines for a terminal. Written whole to `write`; by default to
 * stdout in batches (`stdoutBatched`): a line is written at most BATCH_MS after it is logged, or
 * at once when BATCH_CHARS have gathered, and what is pending at exit is written then. Policy:
 * docs/decisions.md, Operations.
 */
import { Cause, Context, type Layer, Logger, References, Tracer } from "effect"

export type Format = "json" | "text"

export interface Options {
  readonly format: Format
  /** Where each line goes, without its newline. Default: `stdoutBatched`. */
  readonly write?: ((line: string) => void) | undefined
}

export const BATCH_MS = 50
export const BATCH_CHARS = 32_768

let pending = ""
let timer: ReturnType<typeof setTimeout> | undefined
let exitHooked = false

/** Writes the lines logged so far and not yet written; the process's other stdout output calls it first. */
export const flush = (): void => {
  if (timer !== undefined) clearTimeout(timer)
  timer = undefined
  if (pending.length === 0) return
  const text = pending
  pending = ""
  process.stdout.write(text)
}

/** A line to stdout, in the next batch. */
export const stdoutBatched = (line: string): void => {
  pending += `${line}\n`
  if (pending.length >= BATCH_CHARS) {
    flush()
    return
  }
  if (!exitHooked) {
    exitHooked = true
    // At exit stdout is written synchronously (files, pipes and terminals on Linux and macOS).
    process.once("exit", flush)
  }
  timer ??= setTimeout(flush, BATCH_MS).unref()
}

/** A message value as JSON can hold it: errors by their message, the rest as they are. */
const plain = (value: unknown): unknown => (value instanceof Error ? `${value.name}: ${value.message}` : value)

const jsonLogger = (write: (line: string) => void) =>
  Logger.make<unknown, void>(({ cause, date, fiber, logLevel, message }) => {
    const messages = Array.isArray(message) ? message.map(plain) : [plain(message)]
    const line: Record<string, unknown> = {
      timestamp: date.toISOString(),
      level: logLevel.toUpperCase(),
      message: messages.length === 1 ? messages[0] : messages
    }
    for (const [key, value] of Object.entries(fiber.getRef(References.CurrentLogAnnotations))) line[key] = plain(value)
    const span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
    if (span !== undefined && span.sampled) {
      line.traceId = span.traceId
      line.spanId = span.spanId
    }
    if (cause.reasons.length > 0) line.cause = Cause.pretty(cause)
    let text: string
    try {
      text = JSON.stringify(line)
    } catch {
      text = JSON.stringify({ timestamp: line.timestamp, level: line.level, message: String(line.message) })
    }
    write(text)
  })

/** The logger of `options`. */
export const logger = (options: Options): Logger.Logger<unknown, void> => {
  const write = options.write ?? stdoutBatched
  return options.format === "json" ? jsonLogger(write) : Logger.map(Logger.formatLogFmt, write)
}

/** Replaces the default logger with `logger(options)`. */
export const layer = (options: Options): Layer.Layer<never> => Logger.layer([logger(options)])
