/**
 * Strings a store can hold: no U+0000 (NUL) and no unpaired UTF-16 surrogate. `findUnstorable`
 * walks any JSON value (keys and values, nested) and names the first offender and its path, so it
 * is refused where the value is validated, never at the store; `toStorable` replaces them with
 * U+FFFD. Why: docs/decisions.md, Hostile input.
 */

export interface Unstorable {
  /** Where the string is, written the way the data is: `input.imageUrls[1]`, `input["a b"]`. */
  readonly path: string
  /** What is wrong with it: "contains U+0000 (NUL)", "contains an unpaired surrogate", or the same of its key. */
  readonly problem: string
}

const NUL = "contains U+0000 (NUL)"
const SURROGATE = "contains an unpaired surrogate"

/** What keeps a string out of the store, if anything. */
export const problemOf = (text: string): string | undefined => {
  if (text.includes("\u0000")) return NUL
  return text.isWellFormed() ? undefined : SURROGATE
}

/** Whether `text` can be stored. */
export const isStorable = (text: string): boolean => problemOf(text) === undefined

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/

/** `root` followed by each key: `.name` for identifiers, `[0]` for indexes, `["odd key"]` otherwise (JSON-escaped). */
export const formatPath = (root: string, path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (acc, key) =>
      typeof key === "number"
        ? `${acc}[${key}]`
        : typeof key === "string" && IDENTIFIER.test(key)
          ? acc === ""
            ? key
            : `${acc}.${key}`
          : `${acc}[${JSON.stringify(String(key))}]`,
    root
  )

interface Visit {
  readonly value: unknown
  readonly key: PropertyKey | undefined
  readonly parent: Visit | undefined
}

const pathTo = (root: string, visit: Visit): string => {
  const keys: Array<PropertyKey> = []
  for (let at: Visit | undefined = visit; at?.key !== undefined; at = at.parent) keys.push(at.key)
  return formatPath(root, keys.reverse())
}

/**
 * The first string of `value` (in document order, an object's keys before its values) that cannot be
 * stored, with its path under `root`; undefined when all can. Iterative, so any depth that
 * JSON.parse accepts is walked without exhausting the stack.
 */
export const findUnstorable = (value: unknown, root = ""): Unstorable | undefined => {
  const pending: Array<Visit> = [{ value, key: undefined, parent: undefined }]
  while (pending.length > 0) {
    const visit = pending.pop()!
    const current = visit.value
    if (typeof current === "string") {
      const problem = problemOf(current)
      if (problem !== undefined) return { path: pathTo(root, visit), problem }
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) pending.push({ value: current[i], key: i, parent: visit })
    } else if (typeof current === "object" && current !== null) {
      const keys = Object.keys(current)
      for (const key of keys) {
        const problem = problemOf(key)
        if (problem !== undefined) {
          return { path: pathTo(root, { value: undefined, key, parent: visit }), problem: `its name ${problem}` }
        }
      }
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!
        pending.push({ value: (current as Record<string, unknown>)[key], key, parent: visit })
      }
    }
  }
  return undefined
}

/** `<path>: <problem>` and what to do, for an error message; the path is `root` alone at the root. */
export const describe = (found: Unstorable): string =>
  `${found.path === "" ? "the value" : found.path}: ${found.problem}, which cannot be stored; remove or replace it`

/**
 * `value` with every string made storable: U+0000 and unpaired surrogates become U+FFFD. For
 * data the service must keep whatever it holds (an upstream's text result), not for input,
 * which is refused instead.
 */
export const toStorable = <A>(value: A): A => (findUnstorable(value) === undefined ? value : replaceUnstorable(value))

const clean = (text: string): string => (isStorable(text) ? text : text.replaceAll("\u0000", "\ufffd").toWellFormed())

/**
 * The copy toStorable makes, built with a work list rather than recursion (as findUnstorable
 * walks), so that an upstream's metadata nested deeper than the stack allows is made storable
 * instead of failing its task's move again and again. Keys keep their order; of two keys that
 * become equal the later one wins, as Object.fromEntries does; `__proto__` stays an own key.
 */
const replaceUnstorable = <A>(value: A): A => {
  let result: unknown
  const pending: Array<{ readonly source: unknown; readonly assign: (copy: unknown) => void }> = [
    { source: value, assign: (copy) => (result = copy) }
  ]
  const define = (target: object, key: PropertyKey, member: unknown) =>
    Object.defineProperty(target, key, { value: member, enumerable: true, writable: true, configurable: true })
  while (pending.length > 0) {
    const { source, assign } = pending.pop()!
    if (typeof source === "string") {
      assign(clean(source))
    } else if (Array.isArray(source)) {
      const copy: Array<unknown> = new Array(source.length)
      assign(copy)
      for (let i = source.length - 1; i >= 0; i--) pending.push({ source: source[i], assign: (member) => (copy[i] = member) })
    } else if (typeof source === "object" && source !== null) {
      const copy: Record<string, unknown> = {}
      assign(copy)
      const entries = Object.entries(source).map(([key, member]) => [clean(key), member] as const)
      for (const [key] of entries) define(copy, key, undefined)
      // Popped in order, so the later of two equal keys is assigned last.
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, member] = entries[i]!
        pending.push({ source: member, assign: (converted) => define(copy, key, converted) })
      }
    } else {
      assign(source)
    }
  }
  return result as A
}
