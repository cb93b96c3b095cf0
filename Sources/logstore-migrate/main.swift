// The `logstore-migrate` tool. Everything lives in LogStoreMigrateCommands so that tests run the
// same code in-process; see Docs/CLI.md. The executable adds PostgreSQL stores (LogStorePostgres,
// which links NIO: the commands' module does not).
import Foundation
import LogStoreMigrateCommands

#if LOGSTORE_POSTGRES
    import LogStorePostgres

    StoreOpeners.postgres = { url, create in try PostgresDataStore.openForTools(url: url, create: create) }
#endif

exit(LogStoreMigrateCLI.main(Array(CommandLine.arguments.dropFirst())))
