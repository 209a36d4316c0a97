/**
 * A model's input form, generated from its fields as GET /api/v1/models lists them: a choice for
 * fields with options, a number within the bounds for integers, text within the lengths, and for
 * media fields a drop zone (and a file button) that uploads through POST /api/v1/media and fills
 * in the `media:<uuid>` reference.
 */
import type { ComponentChildren } from "preact"
import { useState } from "preact/hooks"
import type { ModelField } from "@taskmeter/kernel"
import { send } from "../api.ts"
import type { FormValues } from "../quote.ts"
import { ErrorNotice } from "./Notice.tsx"

const UPLOAD_TYPES = "image/png,image/jpeg,image/gif,image/webp,video/mp4,video/quicktime,video/webm"

const upload = async (file: File): Promise<string> => {
  const response = await send("/api/v1/media", { method: "POST", body: file, headers: { "content-type": file.type } })
  return ((await response.json()) as { reference: string }).reference
}

const bounds = (field: ModelField.FieldInfo): string =>
  [
    field.required && field.default === undefined ? "required" : undefined,
    field.minimum !== undefined && field.maximum !== undefined ? `${field.minimum} to ${field.maximum}` : undefined,
    field.maxLength !== undefined ? `up to ${field.maxLength} characters` : undefined,
    field.maxItems !== undefined ? `up to ${field.maxItems} items` : undefined,
    field.default !== undefined ? `default ${field.default}` : undefined
  ]
    .filter(Boolean)
    .join(", ")

const MediaDrop = (props: {
  readonly field: ModelField.FieldInfo
  readonly value: string | ReadonlyArray<string>
  readonly onChange: (value: string | ReadonlyArray<string>) => void
}) => {
  const { field } = props
  const [over, setOver] = useState(false)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const add = async (files: ReadonlyArray<File>) => {
    setBusy(true)
    setError(undefined)
    try {
      const references = await Promise.all(files.map(upload))
      if (field.type === "array") props.onChange([...(Array.isArray(props.value) ? props.value : []), ...references])
      else props.onChange(references[0] ?? "")
    } catch (failure) {
      setError(failure)
    } finally {
      setBusy(false)
    }
  }
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: dropping files is a shortcut; the file input inside is the accessible way
    <div
      class={`drop${over ? " over" : ""}`}
      data-field={field.name}
      onDragOver={(event) => {
        event.preventDefault()
        setOver(true)
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(event) => {
        event.preventDefault()
        setOver(false)
        void add([...(event.dataTransfer?.files ?? [])])
      }}
    >
      <p>{busy ? "Uploading…" : "Drop an image or video here, or"}</p>
      <label class="file">
        <span>Choose a file for {field.name}</span>
        <input
          type="file"
          accept={UPLOAD_TYPES}
          multiple={field.type === "array"}
          onChange={(event) => void add([...(event.currentTarget.files ?? [])])}
        />
      </label>
      <ErrorNotice error={error} />
    </div>
  )
}

export const ModelForm = (props: {
  readonly fields: ReadonlyArray<ModelField.FieldInfo>
  readonly values: FormValues
  readonly onChange: (values: FormValues) => void
}) => {
  const set = (name: string, value: string | ReadonlyArray<string>) => props.onChange({ ...props.values, [name]: value })
  return (
    <>
      {props.fields.map((field) => {
        const id = `field-${field.name}`
        const value = props.values[field.name] ?? ""
        const hint = [field.description, bounds(field)].filter(Boolean).join(" · ")
        const required = field.required && field.default === undefined
        const describedBy = hint === "" ? undefined : `${id}-hint`
        let control: ComponentChildren
        if (field.options !== undefined) {
          control = (
            <select
              id={id}
              value={String(value)}
              required={required}
              aria-describedby={describedBy}
              onChange={(e) => set(field.name, e.currentTarget.value)}
            >
              {required || field.default !== undefined ? null : <option value="">(none)</option>}
              {field.options.map((option) => (
                <option key={option} value={String(option)}>
                  {option}
                </option>
              ))}
            </select>
          )
        } else if (field.type === "integer") {
          control = (
            <input
              id={id}
              type="number"
              step={1}
              min={field.minimum}
              max={field.maximum}
              value={String(value)}
              required={required}
              aria-describedby={describedBy}
              onInput={(e) => set(field.name, e.currentTarget.value)}
            />
          )
        } else if (field.type === "array") {
          control = (
            <textarea
              id={id}
              rows={2}
              value={(Array.isArray(value) ? value : String(value).split("\n")).join("\n")}
              required={required}
              aria-describedby={describedBy}
              placeholder="One https URL or media: reference per line"
              onInput={(e) => set(field.name, e.currentTarget.value.split("\n"))}
            />
          )
        } else if ((field.maxLength ?? 0) > 200 || field.name.toLowerCase().includes("prompt")) {
          control = (
            <textarea
              id={id}
              rows={3}
              value={String(value)}
              minLength={field.minLength}
              maxLength={field.maxLength}
              required={required}
              aria-describedby={describedBy}
              onInput={(e) => set(field.name, e.currentTarget.value)}
            />
          )
        } else {
          control = (
            <input
              id={id}
              value={String(value)}
              minLength={field.minLength}
              maxLength={field.maxLength}
              required={required}
              aria-describedby={describedBy}
              onInput={(e) => set(field.name, e.currentTarget.value)}
            />
          )
        }
        return (
          <div class="field" key={field.name}>
            <label for={id}>{field.name}</label>
            {control}
            {hint === "" ? null : (
              <small id={`${id}-hint`} class="hint">
                {hint}
              </small>
            )}
            {field.media ? <MediaDrop field={field} value={value} onChange={(next) => set(field.name, next)} /> : null}
          </div>
        )
      })}
    </>
  )
}
