/**
 * The `upstreamId` an adapter hands the worker: the upstream's own job id, plus what the adapter
 * must remember until the job finishes when the poll request cannot tell it. Today that is only
 * `keep`, the most results to deliver (numImages) when an upstream returns a fixed batch:
 * `task_123#keep=3`. The part before `#` is what an operator searches for upstream.
 */

export interface JobHandle {
  readonly id: string
  readonly keep?: number | undefined
}

export const encode = (id: string, extras: { readonly keep?: number | undefined } = {}): string =>
  extras.keep === undefined ? id : `${id}#keep=${extras.keep}`

export const decode = (handle: string): JobHandle => {
  const match = /^(.*)#keep=(\d+)$/s.exec(handle)
  return match === null ? { id: handle } : { id: match[1]!, keep: Number(match[2]) }
}
