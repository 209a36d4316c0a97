/** The kernel's BlobStore on an S3-compatible bucket (AWS S3, R2, MinIO, B2, GCS XML): see README.md. */
export * as S3BlobStore from "./S3BlobStore.ts"
export * as S3Client from "./S3Client.ts"
export * as S3Settings from "./S3Settings.ts"
export * as S3Store from "./S3Store.ts"
export * as StartupCheck from "./StartupCheck.ts"
