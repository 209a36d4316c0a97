/**
 * Schema failures as the messages the kernel shows: `<path>: <rule>`, the path written the way
 * the data is (`models.alpha.rateCard[0].priceMicros`), so an operator or a caller can find it.
 */
import { Result, Schema, SchemaIssue } from "effect"

type Segment = PropertyKey | { readonly key: PropertyKey }

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key, i) => (typeof key === "number" ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`)).join("")

/** One formatted issue as `<path>: <message>`, or the message alone at the root. */
export const describeIssue = ({
  message,
  path = []
}: {
  readonly message: string
  readonly path?: ReadonlyArray<Segment> | undefined
}): string =>
  path.length === 0
    ? message
    : `${formatPath(path.map((segment) => (typeof segment === "object" ? segment.key : segment)))}: ${message}`

/**
 * A decoder of a JSON data format (a price list) that reports every problem, refusing unknown
 * members as likely misspellings of `format`'s members.
 */
export const decodeAll = <S extends Schema.ConstraintDecoder<unknown>>(schema: S, format: string) => {
  const decode = Schema.decodeUnknownResult(schema)
  const formatter = SchemaIssue.makeFormatterStandardSchemaV1({
    leafHook: (leaf) =>
      leaf._tag === "UnexpectedKey"
        ? `is not a member of the ${format} format (check its spelling)`
        : SchemaIssue.defaultLeafHook(leaf)
  })
  return (raw: unknown): Result.Result<S["Type"], ReadonlyArray<string>> =>
    Result.mapError(decode(raw, { errors: "all", onExcessProperty: "error" }), (error) =>
      formatter(error.issue).issues.map(describeIssue)
    )
}
