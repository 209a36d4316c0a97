/** Test support: `LocalS3.start()`, a real S3-compatible server (s3rver) for tests and benchmarks. */
export * as LocalS3 from "./LocalS3.ts"
