/**
 * The file name a download is offered under (`Content-Disposition`): a stem naming what it is
 * (`result-<uuid>`, `media-<uuid>`) and the extension of its Content-Type, so that a saved file
 * opens as what it was served as. Types outside the list get `.bin`.
 */

const extensions: Readonly<Record<string, string>> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/gif": "gif",
  "image/webp": "webp",
  "video/mp4": "mp4",
  "video/quicktime": "mov",
  "video/webm": "webm",
  "audio/mpeg": "mp3",
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/wave": "wav",
  "text/plain": "txt"
}

/** The extension (without the dot) of a Content-Type, parameters ignored. */
export const extensionOf = (contentType: string): string => extensions[contentType.split(";")[0]!.trim().toLowerCase()] ?? "bin"

/** `<stem>.<extension>`; the stem must be a safe token (letters, digits, `-`, `_`). */
export const of = (stem: string, contentType: string): string => `${stem}.${extensionOf(contentType)}`

/** `attachment; filename="<stem>.<ext>"`: downloads are saved, never rendered in the API's origin. */
export const attachment = (stem: string, contentType: string): string => `attachment; filename="${of(stem, contentType)}"`
