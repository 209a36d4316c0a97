/**
 * Operator › Chat prices: the chat price list (each model's state, upstream, context length,
 * tokenizer and tiers of USD per million prompt and completion tokens by prompt size), and as the
 * CLI's `chat-price set|disable` do: set a chat model's entry (enabling it; what is left empty
 * stays as it is, a new model needs upstream, context length and tiers) or disable it (AdminRpc's
 * ChatPriceSet and ChatPriceDisable; each change is a new version of the list, which every server
 * follows). Mistakes in the form are named before anything is sent; the admin service checks the
 * whole list (tiers in order, never cheaper for a larger prompt) and answers what is wrong.
 * A listed model typed before the list arrives is filled in once it does, unless the operator has
 * edited another field by then.
 */
import { useEffect, useState } from "preact/hooks"
import { ChatPrices, Money } from "@taskmeter/kernel"
import { usd, usdInput } from "../../format.ts"
import { operator } from "../../operator.ts"
import { ErrorNotice, Status } from "../../parts/Notice.tsx"
import { useLoad } from "../../useLoad.ts"

/** One tier as typed. */
interface TierDraft {
  readonly upTo: string
  readonly prompt: string
  readonly completion: string
}

const emptyTier: TierDraft = { upTo: "", prompt: "", completion: "" }

const draftsOf = (tiers: ReadonlyArray<ChatPrices.ChatPriceTier>): ReadonlyArray<TierDraft> =>
  tiers.map((tier) => ({
    upTo: tier.upToPromptTokens === null ? "" : String(tier.upToPromptTokens),
    prompt: usdInput(tier.promptMicrosPerMillion),
    completion: usdInput(tier.completionMicrosPerMillion)
  }))

const WHOLE = /^[1-9][0-9]*$/u

/** The tiers the drafts stand for (none: the tiers stay), and the operator's mistakes. */
const tiersOf = (
  drafts: ReadonlyArray<TierDraft>
): { readonly tiers: ReadonlyArray<ChatPrices.ChatPriceTier>; readonly problems: ReadonlyArray<string> } => {
  const problems: Array<string> = []
  const tiers = drafts.flatMap((draft, i): ReadonlyArray<ChatPrices.ChatPriceTier> => {
    const at = `Tier ${i + 1}`
    const upTo = draft.upTo.trim()
    const prompt = Money.parseUsd(draft.prompt)
    const completion = Money.parseUsd(draft.completion)
    if (upTo !== "" && (!WHOLE.test(upTo) || !Number.isSafeInteger(Number(upTo)))) {
      problems.push(`${at}: "up to" must be a whole number of prompt tokens, or empty for the last, open-ended tier.`)
    }
    if (prompt === undefined) problems.push(`${at}: the prompt rate "${draft.prompt}" is not an amount in USD, such as 0.15.`)
    if (completion === undefined) {
      problems.push(`${at}: the completion rate "${draft.completion}" is not an amount in USD, such as 0.60.`)
    }
    if (prompt === undefined || completion === undefined) return []
    return [
      {
        upToPromptTokens: upTo === "" ? null : Number(upTo),
        promptMicrosPerMillion: prompt,
        completionMicrosPerMillion: completion
      }
    ]
  })
  return { tiers, problems }
}

const tierText = (tier: ChatPrices.ChatPriceTier): string =>
  `${tier.upToPromptTokens === null ? "any prompt" : `prompt up to ${tier.upToPromptTokens.toLocaleString("en-US")} tokens`}: ` +
  `${usd(tier.promptMicrosPerMillion)} / ${usd(tier.completionMicrosPerMillion)} per million prompt / completion tokens`

export const OperatorChatPrices = () => {
  const list = useLoad(() => operator((client) => client.ChatPriceList()))
  const [error, setError] = useState<unknown>(undefined)
  const [done, setDone] = useState<string | undefined>(undefined)
  const [model, setModel] = useState("")
  const [provider, setProvider] = useState("")
  const [contextLength, setContextLength] = useState("")
  const [tokenizer, setTokenizer] = useState("")
  const [tiers, setTiers] = useState<ReadonlyArray<TierDraft>>([emptyTier])
  /** Whether the fields past the model hold the operator's edits rather than a listed entry (or nothing). */
  const [edited, setEdited] = useState(false)
  const models = Object.entries(list.data?.models ?? {}).sort(([a], [b]) => a.localeCompare(b))
  /** Fills the form with the model's entry in the list, if it is listed. */
  const fill = (id: string) => {
    const entry = list.data?.models[id]
    if (entry === undefined) return
    setProvider(entry.provider)
    setContextLength(String(entry.contextLength))
    setTokenizer(entry.tokenizer ?? "")
    setTiers(entry.tiers === undefined ? [emptyTier] : draftsOf(entry.tiers))
    setEdited(false)
  }
  /** Picking a listed model fills the form with its entry. */
  const choose = (next: string) => {
    setModel(next)
    fill(next)
  }
  // The list arriving (or coming back after a change) fills in the model typed so far, unless other fields were edited.
  useEffect(() => {
    if (!edited) fill(model)
  }, [list.data])
  /** The operator's edit of a field past the model. */
  const edit = <A,>(set: (value: A) => void, value: A) => {
    setEdited(true)
    set(value)
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
  const change = (index: number, part: Partial<TierDraft>) =>
    edit(
      setTiers,
      tiers.map((tier, i) => (i === index ? { ...tier, ...part } : tier))
    )
  return (
    <>
      <h1>Chat prices</h1>
      <ErrorNotice error={list.error} />
      <form
        aria-label="Set a chat price"
        onSubmit={(event) => {
          event.preventDefault()
          const id = model.trim()
          const context = contextLength.trim()
          const typedTiers = tiers.filter(
            (tier) => tier.upTo.trim() !== "" || tier.prompt.trim() !== "" || tier.completion.trim() !== ""
          )
          const parsed = tiersOf(typedTiers)
          const problems = [
            ...(id === "" ? ["Name the chat model, as clients send it."] : []),
            ...(context !== "" && (!WHOLE.test(context) || !Number.isSafeInteger(Number(context)))
              ? ["The context length must be a whole number of tokens, such as 128000."]
              : []),
            ...parsed.problems
          ]
          if (problems.length > 0) return setError(new Error(problems.join(" ")))
          void act(`Chat model ${id} set; new chat requests use it from now on.`, () =>
            operator((client) =>
              client.ChatPriceSet({
                model: id,
                ...(provider.trim() === "" ? {} : { provider: provider.trim() }),
                ...(context === "" ? {} : { contextLength: Number(context) }),
                ...(tokenizer === "" ? {} : { tokenizer: tokenizer as ChatPrices.Tokenizer }),
                ...(parsed.tiers.length === 0 ? {} : { tiers: parsed.tiers })
              })
            )
          )
        }}
      >
        <label class="field">
          <span>Chat model</span>
          <input
            name="model"
            list="chat-models"
            value={model}
            spellcheck={false}
            onInput={(event) => choose(event.currentTarget.value)}
          />
          <datalist id="chat-models">
            {models.map(([id]) => (
              <option key={id} value={id} />
            ))}
          </datalist>
        </label>
        <label class="field">
          <span>Upstream (local: the offline model)</span>
          <input
            name="provider"
            value={provider}
            spellcheck={false}
            onInput={(event) => edit(setProvider, event.currentTarget.value)}
          />
        </label>
        <label class="field">
          <span>Context length (tokens)</span>
          <input
            name="contextLength"
            inputMode="numeric"
            value={contextLength}
            onInput={(event) => edit(setContextLength, event.currentTarget.value)}
          />
        </label>
        <label class="field">
          <span>Tokenizer</span>
          <select name="tokenizer" value={tokenizer} onChange={(event) => edit(setTokenizer, event.currentTarget.value)}>
            <option value="">as it is (by default from the model id)</option>
            {ChatPrices.Tokenizer.literals.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <fieldset>
          <legend>Tiers by prompt size (USD per million tokens; leave empty to keep them)</legend>
          {tiers.map((tier, i) => (
            <fieldset key={i}>
              <legend>Tier {i + 1}</legend>
              <label class="field">
                <span>Up to prompt tokens (empty: no limit, the last tier)</span>
                <input
                  inputMode="numeric"
                  value={tier.upTo}
                  onInput={(event) => change(i, { upTo: event.currentTarget.value })}
                />
              </label>
              <label class="field">
                <span>Prompt (USD per million tokens)</span>
                <input
                  inputMode="decimal"
                  value={tier.prompt}
                  onInput={(event) => change(i, { prompt: event.currentTarget.value })}
                />
              </label>
              <label class="field">
                <span>Completion (USD per million tokens)</span>
                <input
                  inputMode="decimal"
                  value={tier.completion}
                  onInput={(event) => change(i, { completion: event.currentTarget.value })}
                />
              </label>
              <button
                type="button"
                class="secondary"
                onClick={() =>
                  edit(
                    setTiers,
                    tiers.filter((_, j) => j !== i)
                  )
                }
              >
                Remove tier {i + 1}
              </button>
            </fieldset>
          ))}
          <button type="button" class="secondary" onClick={() => edit(setTiers, [...tiers, emptyTier])}>
            Add a tier
          </button>
        </fieldset>
        <button type="submit">Set chat price</button>
      </form>
      <ErrorNotice error={error} />
      {done === undefined ? null : <Status>{done}</Status>}
      <div class="scroll">
        <table>
          <caption>The chat price list</caption>
          <thead>
            <tr>
              <th scope="col">Model</th>
              <th scope="col">State</th>
              <th scope="col">Upstream</th>
              <th scope="col">Context</th>
              <th scope="col">Tokenizer</th>
              <th scope="col">Tiers</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {models.map(([id, entry]) => (
              <tr key={id}>
                <td>
                  <code>{id}</code>
                </td>
                <td>{entry.enabled ? "enabled" : "disabled"}</td>
                <td>{entry.provider}</td>
                <td class="number">{entry.contextLength.toLocaleString("en-US")}</td>
                <td>{entry.tokenizer ?? "by model id"}</td>
                <td>
                  {entry.tiers === undefined ? (
                    "no price"
                  ) : (
                    <ul aria-label="Tiers">
                      {entry.tiers.map((tier, i) => (
                        <li key={i}>{tierText(tier)}</li>
                      ))}
                    </ul>
                  )}
                </td>
                <td>
                  {entry.enabled ? (
                    <button
                      type="button"
                      class="secondary"
                      aria-label={`Disable ${id}`}
                      onClick={() =>
                        act(`Chat model ${id} disabled: it leaves the model list until its price is set again.`, () =>
                          operator((client) => client.ChatPriceDisable({ model: id }))
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
