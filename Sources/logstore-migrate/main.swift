// The `logstore-migrate` tool. Everything lives in LogStoreMigrateCommands so that tests run the
// same code in-process; see Docs/CLI.md.
import Foundation
import LogStoreMigrateCommands

exit(LogStoreMigrateCLI.main(Array(CommandLine.arguments.dropFirst())))
