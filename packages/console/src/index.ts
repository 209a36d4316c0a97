/** The customer console: its routes (WebConsole.layer) and its page addresses (Pages). */
export * as Pages from "./Pages.ts"
export * as WebConsole from "./WebConsole.ts"
