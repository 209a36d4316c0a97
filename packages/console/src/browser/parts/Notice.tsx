/** Messages: an error (announced at once) and a status line (announced politely). */
import type { ComponentChildren } from "preact"
import { ApiFailure } from "../api.ts"

const messageOf = (error: unknown): string =>
  error instanceof ApiFailure ? `${error.message} (${error.code})` : error instanceof Error ? error.message : String(error)

export const ErrorNotice = (props: { readonly error: unknown }) =>
  props.error === undefined ? null : (
    <p class="notice error" role="alert">
      {messageOf(props.error)}
    </p>
  )

export const Status = (props: { readonly children: ComponentChildren; readonly id?: string }) => (
  <p class="notice" role="status" id={props.id}>
    {props.children}
  </p>
)
