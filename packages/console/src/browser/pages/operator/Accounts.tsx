/**
 * Operator › Accounts: every account with its balance, reserved and available credits, searched
 * by name or id in the browser; a grant or a payment refund for one account (AdminRpc's
 * CreditsGrant and Refund, one ledger entry each).
 */
import { useState } from "preact/hooks"
import { Money } from "@taskmeter/kernel"
import { usd } from "../../format.ts"
import { operator } from "../../operator.ts"
import { ErrorNotice, Status } from "../../parts/Notice.tsx"
import { useLoad } from "../../useLoad.ts"

/** Dollars as typed (e.g. "2.50") in micros; NaN when it is not a positive amount. */
export const microsOf = (dollars: string): number => {
  const value = Math.round(Number(dollars) * 1_000_000)
  return Number.isFinite(value) && value > 0 ? value : Number.NaN
}

export const OperatorAccounts = () => {
  const list = useLoad(() => operator((client) => client.AccountList()))
  const [search, setSearch] = useState("")
  const [error, setError] = useState<unknown>(undefined)
  const [done, setDone] = useState<string | undefined>(undefined)
  const needle = search.trim().toLowerCase()
  const shown = (list.data ?? []).filter(
    (a) => needle === "" || a.name.toLowerCase().includes(needle) || a.id.toLowerCase().includes(needle)
  )
  return (
    <>
      <h1>Accounts</h1>
      <ErrorNotice error={list.error} />
      <label class="field">
        <span>Search by name or id</span>
        <input type="search" value={search} onInput={(event) => setSearch(event.currentTarget.value)} />
      </label>
      <table>
        <caption>Accounts and their credits</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Id</th>
            <th scope="col">Balance</th>
            <th scope="col">Reserved</th>
            <th scope="col">Available</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((a) => (
            <tr key={a.id}>
              <td>{a.name}</td>
              <td>
                <code>{a.id}</code>
              </td>
              <td>{usd(a.balances.balanceMicros)}</td>
              <td>{usd(a.balances.reservedMicros)}</td>
              <td>{usd(a.balances.availableMicros)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Grant or refund credits</h2>
      <form
        aria-label="Grant or refund credits"
        onSubmit={async (event) => {
          event.preventDefault()
          const form = new FormData(event.currentTarget)
          const accountId = String(form.get("account"))
          const amountMicros = microsOf(String(form.get("amount")))
          const note = String(form.get("note")).trim()
          setDone(undefined)
          setError(undefined)
          if (Number.isNaN(amountMicros)) return setError(new Error("Enter a positive amount in dollars, such as 5 or 2.50."))
          const change = { accountId, amountMicros: Money.micros(amountMicros), ...(note === "" ? {} : { note }) }
          try {
            const moved = await operator((client) =>
              form.get("kind") === "refund" ? client.Refund(change) : client.CreditsGrant(change)
            )
            setDone(
              `${moved.entry.kind} of ${usd(moved.entry.amountMicros)} recorded; available now ${usd(moved.balances.availableMicros)}.`
            )
            list.reload()
          } catch (failure) {
            setError(failure)
          }
        }}
      >
        <label class="field">
          <span>Account</span>
          <select name="account" required>
            {shown.map((a) => (
              <option key={a.id} value={a.id}>
                {a.name} ({a.id})
              </option>
            ))}
          </select>
        </label>
        <label class="field">
          <span>Kind</span>
          <select name="kind">
            <option value="grant">Grant</option>
            <option value="refund">Refund a payment</option>
          </select>
        </label>
        <label class="field">
          <span>Amount (USD)</span>
          <input name="amount" inputMode="decimal" required />
        </label>
        <label class="field">
          <span>Note</span>
          <input name="note" />
        </label>
        <button type="submit">Record</button>
      </form>
      <ErrorNotice error={error} />
      {done === undefined ? null : <Status>{done}</Status>}
    </>
  )
}
