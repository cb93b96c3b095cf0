/// A store whose `setup()` applies the migrations registered on it before it returns: every
/// backend LogStore ships (`LogDataStore`, `SQLiteDataStore`, `PostgresDataStore`). Code that
/// opens "some store" registers its migrations through this protocol and runs on any of them;
/// the conformance suite checks the rules on each (the "Migrations" article).
public protocol MigratingDataStore: DataStore {
    /// The store's migrations: register them before `setup()`, which applies, in registration
    /// order, those the store has not applied yet, each as one write transaction with its history
    /// record, before it returns; a failing step makes `setup()` throw `.migrationFailed` and
    /// leaves the store closed. Any thread.
    var migrations: DataStoreMigrations { get }
    /// What the last successful `setup()` did with ``migrations``; nil before `setup()` and after
    /// `tearDown()`. A value; any thread.
    var migrationReport: MigrationReport? { get }
}
