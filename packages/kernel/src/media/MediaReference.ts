/**
 * A media reference `media:<uuid>` names a file the caller uploaded through POST /api/v1/media.
 * It is accepted in any media input field in place of an HTTPS URL, and only by the account
 * that uploaded it.
 */
import { Schema } from "effect"
import { uuid7 } from "../domain/Uuid7.ts"

const PATTERN = /^media:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/

export const MediaReference = Schema.String.check(Schema.isPattern(PATTERN)).pipe(Schema.brand("MediaReference"))
export type MediaReference = typeof MediaReference.Type

export const make = (): MediaReference => `media:${uuid7()}` as MediaReference

export const isMediaReference = (value: string): value is MediaReference => PATTERN.test(value)

/** The UUID part, the key under which the upload's bytes are stored. */
export const uuidOf = (reference: MediaReference): string => reference.slice("media:".length)
