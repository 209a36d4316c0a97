/**
 * Operator › Reconciliation: the tasks held in reconciliation_required (oldest first, with what
 * the upstream last answered), each resolvable as the CLI's `task resolve` does (AdminRpc's
 * TaskList and TaskResolve): as failed, the reservation released; or as succeeded, with results
 * attached by https link (the server fetches each through its outbound address policy and stores
 * it before the charge), charged at most the quote (by default the quote), the rest released.
 * The operator's reason is the note of every ledger entry written. Results are links only: the
 * CLI's `--result-file` uploads travel inside the rpc request, which suits files read on the
 * operator's machine, not a browser upload of hundreds of megabytes.
 */
import { Result, Schema } from "effect"
import { useState } from "preact/hooks"
import { Money } from "@taskmeter/kernel"
import { type HeldTask, MAX_ATTACHED_RESULTS, ResultToAttach } from "@taskmeter/http/AdminRpc"
import { usd } from "../../format.ts"
import { operator } from "../../operator.ts"
import { ErrorNotice, Status } from "../../parts/Notice.tsx"
import { useLoad } from "../../useLoad.ts"

interface ResultDraft {
  readonly url: string
  readonly contentType: string
}

const emptyResult: ResultDraft = { url: "", contentType: "" }

const COMMON_TYPES = ["image/png", "image/jpeg", "image/webp", "audio/mpeg", "audio/wav", "video/mp4", "text/plain"]

const decodeResult = Schema.decodeUnknownResult(ResultToAttach)

/** The results the drafts stand for, and the operator's mistakes. */
const resultsOf = (
  drafts: ReadonlyArray<ResultDraft>
): { readonly results: ReadonlyArray<ResultToAttach>; readonly problems: ReadonlyArray<string> } => {
  const problems: Array<string> = []
  if (drafts.length === 0) problems.push("Attach at least one result: a task resolved as succeeded delivers something.")
  const results = drafts.flatMap((draft, i): ReadonlyArray<ResultToAttach> => {
    const at = `Result ${i + 1}`
    const url = draft.url.trim()
    const contentType = draft.contentType.trim()
    if (!URL.canParse(url) || new URL(url).protocol !== "https:") {
      problems.push(`${at}: "${url}" is not an https link; the server fetches the file from the public internet.`)
      return []
    }
    const decoded = decodeResult({ url, contentType })
    if (Result.isFailure(decoded)) {
      problems.push(`${at}: the content type "${contentType}" must be image/*, audio/*, video/* or text/*, such as image/png.`)
      return []
    }
    return [decoded.success]
  })
  return { results, problems }
}

/** Dollars as typed, at most the quote; empty is the quote. */
const chargeOf = (text: string, quote: number): Money.Micros | undefined | string => {
  const typed = text.trim()
  if (typed === "") return undefined
  const amount = Money.parseUsd(typed)
  return amount !== undefined && amount <= quote
    ? amount
    : `The charge "${typed}" must be an amount in USD of at most the quote, ${usd(quote)}; leave it empty to charge the quote.`
}

const HeldTaskCard = (props: { readonly task: HeldTask; readonly onResolved: (what: string) => void }) => {
  const { task } = props
  const [outcome, setOutcome] = useState<"failed" | "succeeded">("failed")
  const [results, setResults] = useState<ReadonlyArray<ResultDraft>>([emptyResult])
  const [charge, setCharge] = useState("")
  const [reason, setReason] = useState("")
  const [error, setError] = useState<unknown>(undefined)
  const [busy, setBusy] = useState(false)
  const change = (index: number, part: Partial<ResultDraft>) =>
    setResults(results.map((result, i) => (i === index ? { ...result, ...part } : result)))
  return (
    <form
      class="card"
      aria-label={`Task ${task.id}`}
      // A notice answers the form as submitted: any edit makes it stale.
      onInput={() => setError(undefined)}
      onSubmit={async (event) => {
        event.preventDefault()
        setError(undefined)
        const note = reason.trim()
        const attached = outcome === "succeeded" ? resultsOf(results) : { results: [], problems: [] }
        const chargeMicros = outcome === "succeeded" ? chargeOf(charge, task.priceMicros) : undefined
        const problems = [
          ...(note === "" ? ["Give the reason: it is the note of every ledger entry the resolution writes."] : []),
          ...attached.problems,
          ...(typeof chargeMicros === "string" ? [chargeMicros] : [])
        ]
        if (problems.length > 0) return setError(new Error(problems.join(" ")))
        setBusy(true)
        try {
          const resolved = await operator((client) =>
            client.TaskResolve({
              taskId: task.id,
              accountId: task.accountId,
              outcome,
              reason: note,
              ...(outcome === "succeeded" ? { results: attached.results } : {}),
              ...(typeof chargeMicros === "number" ? { chargeMicros } : {})
            })
          )
          props.onResolved(
            outcome === "failed"
              ? `Task ${task.id} resolved as failed; its reservation is released.`
              : `Task ${task.id} resolved as succeeded with ${attached.results.length} result${attached.results.length === 1 ? "" : "s"}, charged ${usd(resolved.chargedMicros ?? 0)}.`
          )
        } catch (failure) {
          setError(failure)
        } finally {
          setBusy(false)
        }
      }}
    >
      <h2>
        <code>{task.id}</code>
      </h2>
      <dl>
        <dt>Account</dt>
        <dd>
          <code>{task.accountId}</code>
        </dd>
        <dt>Model</dt>
        <dd>{task.model}</dd>
        <dt>Reserved</dt>
        <dd>{usd(task.priceMicros)}</dd>
        <dt>Waiting</dt>
        <dd>{Math.round(task.ageSeconds / 60)} min</dd>
        <dt>Upstream answered</dt>
        <dd>{task.upstreamAnswer ?? "nothing recorded"}</dd>
      </dl>
      <fieldset>
        <legend>Outcome</legend>
        <label class="check">
          <input type="radio" name={`outcome-${task.id}`} checked={outcome === "failed"} onChange={() => setOutcome("failed")} />
          Failed: release the whole reservation
        </label>
        <label class="check">
          <input
            type="radio"
            name={`outcome-${task.id}`}
            checked={outcome === "succeeded"}
            onChange={() => setOutcome("succeeded")}
          />
          Succeeded: attach its results and charge
        </label>
      </fieldset>
      {outcome === "succeeded" ? (
        <fieldset>
          <legend>Results (https links the server fetches; uploads: the CLI's --result-file)</legend>
          {results.map((result, i) => (
            <div key={i}>
              <label class="field">
                <span>Result {i + 1} link</span>
                <input
                  type="url"
                  value={result.url}
                  placeholder="https://"
                  onInput={(event) => change(i, { url: event.currentTarget.value })}
                />
              </label>
              <label class="field">
                <span>Result {i + 1} content type</span>
                <input
                  value={result.contentType}
                  list="result-types"
                  placeholder="image/png"
                  onInput={(event) => change(i, { contentType: event.currentTarget.value })}
                />
              </label>
              <button type="button" class="secondary" onClick={() => setResults(results.filter((_, j) => j !== i))}>
                Remove result {i + 1}
              </button>
            </div>
          ))}
          {results.length < MAX_ATTACHED_RESULTS ? (
            <button type="button" class="secondary" onClick={() => setResults([...results, emptyResult])}>
              Add a result
            </button>
          ) : null}
          <label class="field">
            <span>Charge (USD, at most the quote {usd(task.priceMicros)}; empty: the quote)</span>
            <input inputMode="decimal" value={charge} onInput={(event) => setCharge(event.currentTarget.value)} />
          </label>
        </fieldset>
      ) : null}
      <label class="field">
        <span>Reason</span>
        <input name="reason" maxLength={500} value={reason} onInput={(event) => setReason(event.currentTarget.value)} />
      </label>
      <ErrorNotice error={error} />
      <button type="submit" disabled={busy}>
        {outcome === "failed" ? "Resolve as failed" : "Resolve as succeeded"}
      </button>
    </form>
  )
}

export const OperatorReconciliation = () => {
  const queue = useLoad(() => operator((client) => client.TaskList({ status: "reconciliation_required" })))
  const [done, setDone] = useState<string | undefined>(undefined)
  const tasks = queue.data?.tasks ?? []
  return (
    <>
      <h1>Reconciliation queue</h1>
      <ErrorNotice error={queue.error} />
      {done === undefined ? null : <Status>{done}</Status>}
      {queue.data !== undefined && tasks.length === 0 ? <Status>No task waits for reconciliation.</Status> : null}
      <datalist id="result-types">
        {COMMON_TYPES.map((type) => (
          <option key={type} value={type} />
        ))}
      </datalist>
      {tasks.map((task) => (
        <HeldTaskCard
          key={task.id}
          task={task}
          onResolved={(what) => {
            setDone(what)
            queue.reload()
          }}
        />
      ))}
    </>
  )
}
