/**
 * The OAuth endpoints' and tools' view of strings the store cannot hold, over the kernel's
 * `StorableText`: where the first one is (a path or a parameter name), and what to answer.
 */
import { StorableText } from "@taskmeter/kernel"

export const { isStorable } = StorableText

/** The path of the first unstorable string (key or value) of a JSON value under `root`. */
export const firstUnstorable = (value: unknown, root = ""): string | undefined => {
  const found = StorableText.findUnstorable(value, root)
  return found === undefined ? undefined : found.path === "" ? "the value" : found.path
}

/** The name of the first parameter whose name or value cannot be stored. */
export const firstUnstorableParam = (params: URLSearchParams): string | undefined => {
  for (const [name, value] of params) {
    if (!isStorable(name)) return "a parameter name"
    if (!isStorable(value)) return name
  }
  return undefined
}

/** What to tell a client about the string at `path`. */
export const describeUnstorable = (path: string): string =>
  `${path} holds U+0000 (NUL) or an unpaired surrogate, which cannot be stored; remove or replace it`
