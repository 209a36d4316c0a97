/**
 * Strings the database cannot hold: PostgreSQL text refuses U+0000 (NUL), and an unpaired
 * UTF-16 surrogate has no UTF-8 form (jsonb refuses it; text would be silently altered). Input
 * holding one is refused as malformed before anything is stored or counted.
 * Local stand-in for the kernel's StorableText; to be replaced by it once that is merged.
 */

/** Whether PostgreSQL can store the string exactly. */
export const isStorable = (text: string): boolean => text.isWellFormed() && !text.includes("\u0000")

const MAX_DEPTH = 64

/**
 * The path of the first string (object key or value) in a JSON-like value that cannot be
 * stored, e.g. `redirect_uris[1]`, `$` for the value itself; undefined when all can.
 */
export const firstUnstorable = (value: unknown, path = "$"): string | undefined => {
  const visit = (node: unknown, at: string, depth: number): string | undefined => {
    if (typeof node === "string") return isStorable(node) ? undefined : at
    if (node === null || typeof node !== "object" || depth > MAX_DEPTH) return undefined
    if (Array.isArray(node)) {
      for (let index = 0; index < node.length; index++) {
        const found = visit(node[index], `${at}[${index}]`, depth + 1)
        if (found !== undefined) return found
      }
      return undefined
    }
    for (const [key, member] of Object.entries(node)) {
      const name = at === "$" ? key : `${at}.${key}`
      if (!isStorable(key)) return at === "$" ? "a member name" : `a member name in ${at}`
      const found = visit(member, name, depth + 1)
      if (found !== undefined) return found
    }
    return undefined
  }
  return visit(value, path, 0)
}

/** The name of the first parameter whose name or value cannot be stored; undefined when all can. */
export const firstUnstorableParam = (params: URLSearchParams): string | undefined => {
  for (const [name, value] of params) {
    if (!isStorable(name)) return "a parameter name"
    if (!isStorable(value)) return name
  }
  return undefined
}

/** What to tell a client about the string at `path`. */
export const describeUnstorable = (path: string): string =>
  `${path} contains a character this service cannot store (U+0000 or an unpaired UTF-16 surrogate).`
