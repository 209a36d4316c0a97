/**
 * The `errorCode`s the service writes on tasks that fail or await reconciliation (the spec's
 * Task.errorCode). Adapters add their own upstream codes (e.g. UPSTREAM_REJECTED_INPUT) through
 * ProviderError.errorCode and PollResult.Failed; these are the ones the kernel decides itself.
 */

/** The task passed its deadline before it finished; the reservation was released. */
export const DeadlineExceeded = "DEADLINE_EXCEEDED"
/** A submission may have reached the upstream, unconfirmed: the task awaits reconciliation. */
export const OutcomeUnknown = "UPSTREAM_OUTCOME_UNKNOWN"
/** The upstream refused the task and gave no code of its own. */
export const Rejected = "UPSTREAM_REJECTED"
/** The upstream failed the job and gave no code of its own. */
export const Failed = "UPSTREAM_FAILED"
/** The upstream reported success but delivered nothing. */
export const NoOutput = "UPSTREAM_NO_OUTPUT"
/** A result file exceeded the worker's size cap. */
export const ResultTooLarge = "RESULT_TOO_LARGE"
/**
 * A result link the address policy refuses: not https, a host that is not public (or resolves
 * to a non-public address), or a redirect. No file is stored and nothing is charged.
 */
export const ResultUrlRefused = "RESULT_URL_REFUSED"
/** The model lost its executor while the task was queued. */
export const ExecutionUnavailable = "EXECUTION_UNAVAILABLE"
/** Reconciliation found that the upstream never received the task. */
export const NeverReceived = "UPSTREAM_NEVER_RECEIVED"
/** The caller canceled the task before it was accepted upstream, or the upstream confirmed the cancel; released. */
export const Canceled = "CANCELED"
