/** Client-side navigation over the History API: the current path, and moving to another. */
import { useEffect, useState } from "preact/hooks"

const CHANGE = "taskmeter:navigate"

export const navigate = (to: string, replace = false): void => {
  if (replace) history.replaceState(null, "", to)
  else history.pushState(null, "", to)
  dispatchEvent(new Event(CHANGE))
}

/** The current location (path and query), following navigations and Back/Forward. */
export const useLocation = (): URL => {
  const [href, setHref] = useState(location.href)
  useEffect(() => {
    const update = () => setHref(location.href)
    addEventListener("popstate", update)
    addEventListener(CHANGE, update)
    return () => {
      removeEventListener("popstate", update)
      removeEventListener(CHANGE, update)
    }
  }, [])
  return new URL(href)
}

/** A click on a same-origin link that the app should handle itself (no modifier, no new tab). */
export const isPlainClick = (event: MouseEvent): boolean =>
  event.button === 0 && !event.metaKey && !event.ctrlKey && !event.shiftKey && !event.altKey
