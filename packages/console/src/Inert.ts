/**
 * The browser bundle's stand-in for Node's built-in modules and its Buffer global, which kernel
 * modules the API definition imports touch at load (never afterwards in the browser): every
 * property, call and construction of it is itself, it reads as "", and it is its own prototype,
 * where esbuild's CommonJS interop looks up named imports. So `createRequire(import.meta.url)`
 * or `Buffer.alloc(16).toString("base64url")` at module level pass. Bundle.ts wires it in.
 */
/** A function, so that the proxy can be called and constructed. */
function target() {}

const handler: ProxyHandler<typeof target> = {
  get: (_, key) => (key === Symbol.toPrimitive ? () => "" : key === "__esModule" ? false : inert),
  apply: () => inert,
  construct: () => inert,
  getPrototypeOf: () => inert
}

export const inert: any = new Proxy(target, handler)

/** Injected for the free identifier `Buffer` (not `globalThis.Buffer`, which effect checks for). */
export const Buffer = inert
