/** The parser's output (prom2json's shape) for the metric types the tests read. */
declare module "parse-prometheus-text-format" {
  export interface Sample {
    readonly labels?: Record<string, string>
    /** Counters and gauges. */
    readonly value?: string
    /** Histograms: cumulative counts by upper bound. */
    readonly buckets?: Record<string, string>
    readonly count?: string
    readonly sum?: string
  }
  export interface Family {
    readonly name: string
    readonly help: string
    readonly type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED"
    readonly metrics: ReadonlyArray<Sample>
  }
  const parse: (text: string) => ReadonlyArray<Family>
  export default parse
}
