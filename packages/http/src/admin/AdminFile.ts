/**
 * `<DATA_DIR>/admin.json` (`{ url, adminUrl, token }`): how a CLI on the same machine finds the
 * running server and its operator token. The server writes it at start, mode 0600, the token in
 * clear since the CLI must present it. `url` is the public API (a worker's default PUBLIC_URL),
 * `adminUrl` the admin listener the CLI calls (absent in files of older releases).
 */
import { randomUUID } from "node:crypto"
import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { Data, Effect, Schema } from "effect"

export const FILE_NAME = "admin.json"

export const AdminFileContents = Schema.Struct({
  url: Schema.String,
  adminUrl: Schema.optionalKey(Schema.String),
  token: Schema.String
})
export type AdminFileContents = typeof AdminFileContents.Type

export class AdminFileError extends Data.TaggedError("AdminFileError")<{
  readonly path: string
  readonly message: string
}> {}

export const pathOf = (dataDir: string): string => join(dataDir, FILE_NAME)

const isMissing = (cause: unknown): boolean =>
  typeof cause === "object" && cause !== null && "code" in cause && cause.code === "ENOENT"

/** The file's contents; undefined when there is none. */
export const read = (dataDir: string): Effect.Effect<AdminFileContents | undefined, AdminFileError> => {
  const path = pathOf(dataDir)
  return Effect.tryPromise({
    try: () =>
      readFile(path, "utf8").then(
        (text) => text,
        (cause) => (isMissing(cause) ? undefined : Promise.reject(cause))
      ),
    catch: (cause) => new AdminFileError({ path, message: `cannot be read: ${String(cause)}` })
  }).pipe(
    Effect.flatMap((text) =>
      text === undefined
        ? Effect.succeed(undefined)
        : Effect.try({
            try: () => Schema.decodeUnknownSync(AdminFileContents)(JSON.parse(text)),
            catch: () => new AdminFileError({ path, message: "is not a JSON object with string members url and token" })
          })
    )
  )
}

/** Replaces the file whole (written aside and renamed) with owner-only permissions. */
export const write = (dataDir: string, contents: AdminFileContents): Effect.Effect<void, AdminFileError> => {
  const path = pathOf(dataDir)
  return Effect.tryPromise({
    try: async () => {
      await mkdir(dataDir, { recursive: true })
      const temporary = `${path}.${randomUUID()}.partial`
      await writeFile(temporary, `${JSON.stringify(contents, null, 2)}\n`, { mode: 0o600 })
      // The mode given to writeFile is filtered by the umask; make it exact.
      await chmod(temporary, 0o600)
      await rename(temporary, path)
    },
    catch: (cause) => new AdminFileError({ path, message: `cannot be written: ${String(cause)}` })
  })
}
