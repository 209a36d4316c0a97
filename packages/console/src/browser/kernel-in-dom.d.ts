/**
 * The kernel modules the API definition imports are type-checked here under the DOM library,
 * whose RequestInit lacks the `dispatcher` option of Node's fetch that PublicFetch passes (that
 * code never runs in the browser).
 */
declare global {
  interface RequestInit {
    dispatcher?: unknown
  }
}
export {}
