/**
 * Credits: a top-up (when the server takes payments), the ledger of GET /api/v1/usage, a page at
 * a time (older pages on demand), filtered by kind, text and dates in the browser, and the
 * filtered entries exported as CSV.
 */
import { useEffect, useState } from "preact/hooks"
import type { LedgerEntry } from "@taskmeter/http/Api"
import { ApiFailure, call } from "../api.ts"
import { csv } from "../csv.ts"
import { dateTime, usd } from "../format.ts"
import { ErrorNotice, Status } from "../parts/Notice.tsx"
import { useLoad } from "../useLoad.ts"

type Entry = LedgerEntry

/** The top-up offer, or null when this server takes no payments (REQUEST_NOT_FOUND). */
const loadTopUps = () =>
  call(({ billing }) => billing.billing.topups()).catch((error: unknown) => {
    if (error instanceof ApiFailure && error.code === "REQUEST_NOT_FOUND") return null
    throw error
  })

/** Buying credits: a hosted checkout of the amount chosen, where the browser goes to pay. */
const TopUp = () => {
  const offer = useLoad(loadTopUps)
  const [error, setError] = useState<unknown>(undefined)
  if (offer.data === undefined || offer.data === null) return <ErrorNotice error={offer.error} />
  return (
    <form
      class="filters"
      aria-label="Top up"
      onSubmit={async (event) => {
        event.preventDefault()
        const amountMicros = Number(new FormData(event.currentTarget).get("amount"))
        try {
          const checkout = await call(({ billing }) => billing.billing.checkout({ payload: { amountMicros } }))
          location.assign(checkout.url)
        } catch (failure) {
          setError(failure)
        }
      }}
    >
      <label class="field">
        <span>Amount</span>
        <select name="amount">
          {offer.data.presetsMicros.map((micros) => (
            <option key={micros} value={micros}>
              {usd(micros)}
            </option>
          ))}
        </select>
      </label>
      <button type="submit">Top up</button>
      <ErrorNotice error={error} />
    </form>
  )
}

const KINDS = ["grant", "reserve", "charge", "release", "refund", "adjustment"] as const

export const Credits = () => {
  const [entries, setEntries] = useState<ReadonlyArray<Entry>>([])
  const [cursor, setCursor] = useState<string | null | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const [kind, setKind] = useState("")
  const [search, setSearch] = useState("")
  const [from, setFrom] = useState("")
  const [to, setTo] = useState("")
  const more = async (before: string | undefined) => {
    try {
      const page = await call(({ api }) => api.usage.get({ query: before === undefined ? {} : { before } }))
      setEntries((old) => (before === undefined ? page.entries : [...old, ...page.entries]))
      setCursor(page.nextCursor)
    } catch (failure) {
      setError(failure)
    }
  }
  useEffect(() => {
    void more(undefined)
  }, [])
  const needle = search.trim().toLowerCase()
  const shown = entries.filter(
    (entry) =>
      (kind === "" || entry.kind === kind) &&
      (needle === "" ||
        [entry.id, entry.taskId, entry.chatRequestId, entry.note].some((value) => value?.toLowerCase().includes(needle))) &&
      (from === "" || entry.createdAt.slice(0, 10) >= from) &&
      (to === "" || entry.createdAt.slice(0, 10) <= to)
  )
  const exportCsv = () => {
    const text = csv([
      ["id", "kind", "amountMicros", "amountUsd", "taskId", "chatRequestId", "note", "createdAt"],
      ...shown.map((e) => [e.id, e.kind, e.amountMicros, usd(e.amountMicros), e.taskId, e.chatRequestId, e.note, e.createdAt])
    ])
    const link = document.createElement("a")
    link.href = URL.createObjectURL(new Blob([text], { type: "text/csv" }))
    link.download = "taskmeter-ledger.csv"
    link.click()
    URL.revokeObjectURL(link.href)
  }
  return (
    <>
      <h1>Credits</h1>
      <TopUp />
      <ErrorNotice error={error} />
      <form class="filters" aria-label="Filter the ledger" onSubmit={(event) => event.preventDefault()}>
        <label class="field">
          <span>Kind</span>
          <select value={kind} onChange={(event) => setKind(event.currentTarget.value)}>
            <option value="">All kinds</option>
            {KINDS.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </label>
        <label class="field">
          <span>Task, request or note</span>
          <input type="search" value={search} onInput={(event) => setSearch(event.currentTarget.value)} />
        </label>
        <label class="field">
          <span>From (UTC day)</span>
          <input type="date" value={from} onInput={(event) => setFrom(event.currentTarget.value)} />
        </label>
        <label class="field">
          <span>To (UTC day)</span>
          <input type="date" value={to} onInput={(event) => setTo(event.currentTarget.value)} />
        </label>
        <button type="button" class="secondary" onClick={exportCsv}>
          Export CSV
        </button>
      </form>
      {cursor === undefined ? (
        <Status>Loading…</Status>
      ) : (
        <Status>{`${shown.length} of ${entries.length} entries loaded`}</Status>
      )}
      <div class="scroll">
        <table>
          <caption class="visually-hidden">Ledger entries, newest first</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Kind</th>
              <th scope="col" class="number">
                Amount
              </th>
              <th scope="col">For</th>
              <th scope="col">Note</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((entry) => (
              <tr key={entry.id}>
                <td>{dateTime(entry.createdAt)}</td>
                <td>{entry.kind}</td>
                <td class="number">{usd(entry.amountMicros)}</td>
                <td>{entry.taskId ?? entry.chatRequestId ?? ""}</td>
                <td>{entry.note ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {typeof cursor === "string" ? (
        <button type="button" class="secondary" onClick={() => more(cursor)}>
          Load older entries
        </button>
      ) : null}
    </>
  )
}
