/** An <a> that navigates inside the app for plain clicks and acts as a normal link otherwise. */
import type { ComponentChildren } from "preact"
import { isPlainClick, navigate } from "../router.ts"

export const Link = (props: {
  readonly href: string
  readonly children: ComponentChildren
  readonly class?: string
  readonly current?: boolean
}) => (
  <a
    href={props.href}
    class={props.class}
    aria-current={props.current ? "page" : undefined}
    onClick={(event) => {
      if (!isPlainClick(event)) return
      event.preventDefault()
      navigate(props.href)
    }}
  >
    {props.children}
  </a>
)
