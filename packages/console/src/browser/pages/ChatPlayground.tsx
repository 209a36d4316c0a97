/**
 * The chat playground: a conversation with a chat model, streamed from POST
 * /api/v1/chat/completions (`stream: true`, usage included), showing each answer as it arrives
 * and what it was charged (`svc.charged_micros`).
 */
import { useState } from "preact/hooks"
import type { ChatCompletionChunk, ChatStreamError } from "@taskmeter/http/Api"
import { ApiFailure, call, send } from "../api.ts"
import { usd } from "../format.ts"
import { ErrorNotice, Status } from "../parts/Notice.tsx"
import { dataEvents } from "../sse.ts"
import { useLoad } from "../useLoad.ts"

interface Message {
  readonly role: "user" | "assistant"
  readonly content: string
  readonly chargedMicros?: number
}

export const ChatPlayground = () => {
  const models = useLoad(() => call(({ api }) => api.catalog.models()))
  const [model, setModel] = useState("")
  const [messages, setMessages] = useState<ReadonlyArray<Message>>([])
  const [draft, setDraft] = useState("")
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const chatModels = models.data?.data ?? []
  const chosen = model || chatModels[0]?.id || ""
  const ask = async (event: Event) => {
    event.preventDefault()
    if (draft.trim() === "" || chosen === "") return
    const history = [...messages, { role: "user" as const, content: draft }]
    setMessages([...history, { role: "assistant", content: "" }])
    setDraft("")
    setBusy(true)
    setError(undefined)
    let answer = ""
    let charged: number | undefined
    const show = () =>
      setMessages([
        ...history,
        { role: "assistant", content: answer, ...(charged === undefined ? {} : { chargedMicros: charged }) }
      ])
    try {
      const response = await send("/api/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: chosen,
          stream: true,
          stream_options: { include_usage: true },
          messages: history.map(({ role, content }) => ({ role, content }))
        })
      })
      if (response.body === null) throw new ApiFailure("NETWORK", "The answer had no body.")
      for await (const data of dataEvents(response.body)) {
        if (data === "[DONE]") break
        const parsed = JSON.parse(data) as ChatCompletionChunk | ChatStreamError
        if ("error" in parsed) {
          charged = parsed.svc.charged_micros
          show()
          throw new ApiFailure(parsed.error.code, parsed.error.message)
        }
        const delta = parsed.choices[0]?.delta as { content?: unknown } | undefined
        if (typeof delta?.content === "string") answer += delta.content
        if (parsed.svc !== undefined) charged = parsed.svc.charged_micros
        show()
      }
    } catch (failure) {
      setError(failure)
    } finally {
      setBusy(false)
    }
  }
  return (
    <>
      <h1>Chat playground</h1>
      <ErrorNotice error={models.error} />
      <label class="field">
        <span>Chat model</span>
        <select value={chosen} onChange={(event) => setModel(event.currentTarget.value)}>
          {chatModels.map((m) => (
            <option key={m.id} value={m.id}>
              {m.id} ({m.owned_by})
            </option>
          ))}
        </select>
      </label>
      <ol class="conversation" aria-label="Conversation" aria-live="polite">
        {messages.map((message, i) => (
          <li key={i} class={`message ${message.role}`}>
            <span class="role">{message.role === "user" ? "You" : chosen}</span>
            <p>{message.content || (busy ? "…" : "")}</p>
            {message.chargedMicros !== undefined ? <small class="charged">Charged {usd(message.chargedMicros)}</small> : null}
          </li>
        ))}
      </ol>
      {messages.length === 0 ? <Status>Ask something to start.</Status> : null}
      <form aria-label="Send a message" onSubmit={ask}>
        <label class="field">
          <span>Message</span>
          <textarea rows={3} value={draft} onInput={(event) => setDraft(event.currentTarget.value)} required />
        </label>
        <ErrorNotice error={error} />
        <button type="submit" disabled={busy || chosen === ""}>
          {busy ? "Answering…" : "Send"}
        </button>
        {messages.length > 0 ? (
          <button type="button" class="secondary" onClick={() => setMessages([])} disabled={busy}>
            New conversation
          </button>
        ) : null}
      </form>
    </>
  )
}
