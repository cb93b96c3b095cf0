// The `logstore-compact` maintenance tool. Everything lives in LogStoreCompactCommands so that
// tests run the same code in-process; see Docs/CLI.md.
import Foundation
import LogStoreCompactCommands

exit(LogStoreCompactCLI.main(Array(CommandLine.arguments.dropFirst())))
