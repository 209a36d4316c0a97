/** A button copying `text` to the clipboard, saying so for screen readers. */
import { useState } from "preact/hooks"

export const CopyButton = (props: { readonly text: string; readonly label: string }) => {
  const [done, setDone] = useState(false)
  return (
    <button
      type="button"
      class="secondary"
      onClick={async () => {
        await navigator.clipboard.writeText(props.text)
        setDone(true)
        setTimeout(() => setDone(false), 2000)
      }}
    >
      {done ? "Copied" : props.label}
      <span class="visually-hidden" aria-live="polite">
        {done ? " to the clipboard" : ""}
      </span>
    </button>
  )
}
