/**
 * Reading an upstream's callback body: the string at a path of nested objects, or undefined. The
 * body only names the job; its outcome is then polled, so nothing else of it is read.
 */

export const stringAt = (body: unknown, ...path: ReadonlyArray<string>): string | undefined => {
  let value: unknown = body
  for (const key of path) {
    if (typeof value !== "object" || value === null || !Object.hasOwn(value, key)) return undefined
    value = (value as { readonly [key: string]: unknown })[key]
  }
  return typeof value === "string" && value !== "" ? value : undefined
}
