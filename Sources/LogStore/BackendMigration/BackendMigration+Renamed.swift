// The names these types had before "backend migration" (moving a store's data to another
// backend) was told apart from schema migrations (``DataStoreMigrations``). Kept so that code
// written against them still compiles, with a warning that names the replacement.

/// Renamed ``BackendMigrator``.
@available(*, deprecated, renamed: "BackendMigrator")
public typealias DataStoreMigrator = BackendMigrator
/// Renamed ``BackendMigrationProgress``.
@available(*, deprecated, renamed: "BackendMigrationProgress")
public typealias MigrationProgress = BackendMigrationProgress
/// Renamed ``BackendMigrationCopyReport``.
@available(*, deprecated, renamed: "BackendMigrationCopyReport")
public typealias MigrationCopyReport = BackendMigrationCopyReport
/// Renamed ``BackendMigrationVerification``.
@available(*, deprecated, renamed: "BackendMigrationVerification")
public typealias MigrationVerification = BackendMigrationVerification
/// Renamed ``BackendMigrationCatchUpReport``.
@available(*, deprecated, renamed: "BackendMigrationCatchUpReport")
public typealias MigrationCatchUpReport = BackendMigrationCatchUpReport
/// Renamed ``BackendMigrationDigest``.
@available(*, deprecated, renamed: "BackendMigrationDigest")
public typealias MigrationDigest = BackendMigrationDigest
