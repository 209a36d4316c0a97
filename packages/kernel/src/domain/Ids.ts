/**
 * Identifiers. Every id a caller sees is unguessable (a UUID behind a short prefix that says what
 * it names, with 74 random bits), so knowing one account's ids tells nothing about another's.
 * Ids made now are time-ordered (UUID v7, `Uuid7.ts`); ids made before them (v4) stay valid.
 */
import { Schema } from "effect"
import { uuid7 } from "./Uuid7.ts"

const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[47][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"

const prefixed = (prefix: string) => Schema.String.check(Schema.isPattern(new RegExp(`^${prefix}${UUID}$`)))

export const AccountId = prefixed("acct_").pipe(Schema.brand("AccountId"))
export type AccountId = typeof AccountId.Type
export const ApiKeyId = prefixed("key_").pipe(Schema.brand("ApiKeyId"))
export type ApiKeyId = typeof ApiKeyId.Type
export const TaskId = prefixed("task_").pipe(Schema.brand("TaskId"))
export type TaskId = typeof TaskId.Type
export const ChatRequestId = prefixed("chatreq_").pipe(Schema.brand("ChatRequestId"))
export type ChatRequestId = typeof ChatRequestId.Type
export const LedgerEntryId = prefixed("entry_").pipe(Schema.brand("LedgerEntryId"))
export type LedgerEntryId = typeof LedgerEntryId.Type
/** Results are served at /api/v1/results/<uuid>: the spec names them by a bare UUID. */
export const ResultId = prefixed("").pipe(Schema.brand("ResultId"))
export type ResultId = typeof ResultId.Type
/** The asset of a text result (lyrics): its content is the asset's `text`; there is no file to download. */
export const TextAssetId = prefixed("text_").pipe(Schema.brand("TextAssetId"))
export type TextAssetId = typeof TextAssetId.Type

export const UserId = prefixed("user_").pipe(Schema.brand("UserId"))
export type UserId = typeof UserId.Type

export const makeAccountId = (): AccountId => `acct_${uuid7()}` as AccountId
export const makeUserId = (): UserId => `user_${uuid7()}` as UserId
export const makeApiKeyId = (): ApiKeyId => `key_${uuid7()}` as ApiKeyId
export const makeTaskId = (): TaskId => `task_${uuid7()}` as TaskId
export const makeChatRequestId = (): ChatRequestId => `chatreq_${uuid7()}` as ChatRequestId
export const makeLedgerEntryId = (): LedgerEntryId => `entry_${uuid7()}` as LedgerEntryId
export const makeResultId = (): ResultId => uuid7() as ResultId
export const makeTextAssetId = (): TextAssetId => `text_${uuid7()}` as TextAssetId

export const isTaskId = Schema.is(TaskId)
export const isResultId = Schema.is(ResultId)
export const isTextAssetId = Schema.is(TextAssetId)
export const isChatRequestId = Schema.is(ChatRequestId)
export const isLedgerEntryId = Schema.is(LedgerEntryId)
