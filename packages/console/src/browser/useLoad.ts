/** A page's data: loads once (and again on `reload` or when `deps` change), with its failure. */
import { useCallback, useEffect, useState } from "preact/hooks"

export interface Loaded<A> {
  readonly data: A | undefined
  readonly error: unknown
  readonly reload: () => void
}

export const useLoad = <A>(load: () => Promise<A>, deps: ReadonlyArray<unknown> = []): Loaded<A> => {
  const [data, setData] = useState<A | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const [round, setRound] = useState(0)
  useEffect(() => {
    let live = true
    load().then(
      (value) => {
        if (!live) return
        setData(value)
        setError(undefined)
      },
      (failure: unknown) => live && setError(failure)
    )
    return () => {
      live = false
    }
  }, [round, ...deps])
  return { data, error, reload: useCallback(() => setRound((n) => n + 1), []) }
}
