/** The tokens of one chat call: as its upstream reported them, or as ChatTokens counted them. */
export interface TokenUsage {
  readonly promptTokens: number
  readonly completionTokens: number
}
