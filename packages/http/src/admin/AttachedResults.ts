/**
 * The results an operator attaches when resolving a held task as succeeded, stored as the
 * worker stores an upstream's (`Outputs.store`): a link is fetched through `PublicFetch` under the
 * `AddressPolicy` (public https only), uploaded bytes are written as given; each under the cap.
 * Failures are the operator's to fix (`ResultUnavailable`), except a store that failed.
 */
import { Effect } from "effect"
import type { BlobStore, MediaStore, Provider, TaskStore } from "@taskmeter/kernel"
import { Outputs } from "@taskmeter/kernel"
import { AdminError } from "./AdminRpc.ts"
import type { ResultToAttach } from "./AdminRpc.ts"

/** The largest result attached (either way), and how long fetching one may take. */
export const MAX_RESULT_BYTES = 512 * 1024 * 1024
export const DOWNLOAD_TIMEOUT_MS = 10 * 60 * 1000

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

const outputOf = (result: ResultToAttach, index: number): Effect.Effect<Provider.ProviderOutput, AdminError> => {
  const type = result.contentType.slice(0, result.contentType.indexOf("/")) as Provider.ProviderOutput["type"]
  if ("url" in result) return Effect.succeed({ type, url: result.url, contentType: result.contentType })
  if (!BASE64.test(result.base64) || result.base64.length % 4 !== 0) {
    return Effect.fail(
      new AdminError({ reason: "InvalidRequest", message: `results[${index}].base64 is not standard base64 (RFC 4648).` })
    )
  }
  return Effect.succeed({ type, bytes: Buffer.from(result.base64, "base64"), contentType: result.contentType })
}

/** Stores the results as the task's assets, in order. */
export const store = (
  task: Pick<TaskStore.TaskRecord, "id" | "accountId">,
  results: ReadonlyArray<ResultToAttach>
): Effect.Effect<ReadonlyArray<TaskStore.StoredAsset>, AdminError, BlobStore.BlobStore | MediaStore.MediaStore> =>
  Effect.gen(function* () {
    const outputs = yield* Effect.forEach(results, outputOf)
    return yield* Outputs.store(task, outputs, { maxBytes: MAX_RESULT_BYTES, timeoutMs: DOWNLOAD_TIMEOUT_MS }).pipe(
      Effect.mapError((error) => {
        switch (error._tag) {
          case "StoreUnavailable":
            return new AdminError({ reason: "StoreUnavailable", message: error.message })
          case "BlobTooLarge":
            return new AdminError({
              reason: "ResultUnavailable",
              message: `A result is larger than ${MAX_RESULT_BYTES} bytes; nothing was attached.`
            })
          default:
            return new AdminError({ reason: "ResultUnavailable", message: `${error.message}; nothing was attached.` })
        }
      })
    )
  })
