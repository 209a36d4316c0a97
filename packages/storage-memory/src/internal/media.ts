import { Effect } from "effect"
import { MediaStore } from "@taskmeter/kernel"
import type { State } from "./state.ts"

export const make = (state: State): MediaStore.MediaStore["Service"] =>
  MediaStore.MediaStore.of({
    putMedia: (record) => Effect.sync(() => void state.media.set(record.reference, record)),
    getMedia: (accountId, reference) =>
      Effect.sync(() => {
        const record = state.media.get(reference)
        return record?.accountId === accountId ? record : undefined
      }),
    missingMedia: (accountId, references) =>
      Effect.sync(() => references.filter((reference) => state.media.get(reference)?.accountId !== accountId)),
    putResult: (record) => Effect.sync(() => void state.results.set(record.id, record)),
    getResult: (accountId, id) =>
      Effect.sync(() => {
        const record = state.results.get(id)
        return record?.accountId === accountId ? record : undefined
      })
  })
