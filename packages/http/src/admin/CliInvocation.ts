/**
 * How `taskmeter` reads its command line beyond effect/cli's parser: `--json` is accepted wherever
 * it is placed (it is moved after the command path, where the admin commands declare it), and a
 * usage error prints its one-line cause first, then the command's help, both on stderr.
 */
import { Console, Effect } from "effect"
import { CliOutput } from "effect/cli"

/** `args` with every `--json` before a `--` moved to its end (after the operands, where any command's flags may go). */
export const normalize = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const end = args.indexOf("--")
  const options = end === -1 ? args : args.slice(0, end)
  if (!options.includes("--json")) return args
  const rest = options.filter((arg) => arg !== "--json")
  return end === -1 ? [...rest, "--json"] : [...rest, "--json", ...args.slice(end)]
}

/** The default presenter, but an invalid invocation shows `error: <cause>` before the help, on stderr. */
export const presenter: CliOutput.Presenter = {
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Effect.gen(function* () {
          const formatter = yield* CliOutput.Formatter
          for (const error of event.errors) yield* Console.error(`error: ${formatter.formatCliError(error)}`)
          yield* Console.error(`\n${formatter.formatHelpDoc(event.helpDoc)}`)
        })
      : CliOutput.defaultPresenter.present(event)
}

export const layer = CliOutput.layerPresenter(presenter)
