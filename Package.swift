// swift-tools-version: 6.1
//
// LogStore: a JustPersist-style transactional DataStore for Swift, on its own
// append-only, log-structured storage engine.
//
// Module graph (dependencies point one way):
//
//   CLZ4, CCRC32C <- LogStoreEngine <- LogStore <- logstore-demo, logstore-crashtest
//                          <- LogStoreEncryption (+ swift-crypto's Crypto)
//                          <- LogStoreCompactCommands <- logstore-compact   (the engine and LogStoreEncryption)
//                                 LogStore <- LogStoreSQL <- LogStoreSQLite (+ GRDB)
//                                 LogStore <- LogStoreSQL <- LogStorePostgres (+ postgres-nio, NIO)
//          LogStore, LogStoreSQLite, LogStoreEncryption <- LogStoreMigrateCommands <- logstore-migrate (+ LogStorePostgres)
//                                 LogStore <- DataStoreConformance (test support, no test framework)
//
// LogStoreSQL is the SQL backends' shared, database-free half (the JSON row format, #Predicate to
// SQL in both dialects): LogStoreSQLite uses it with GRDB, LogStorePostgres with postgres-nio.
// Only LogStorePostgres, its tests and the logstore-migrate executable link NIO: the commands'
// module takes the PostgreSQL opener from the executable, so an app never builds NIO unless it
// depends on LogStorePostgres. LOGSTORE_POSTGRES=0 leaves the PostgreSQL targets (and the
// resolution of postgres-nio) out, for the builds that do not need them (ThreadSanitizer, fuzzing).
// LogStoreCommandSupport (console, progress line, JSON output, exit codes, key options) is shared
// by the two command-line tools and depends on the engine's error type only.
// LogStoreEncryption implements the engine's `StoreCipher` with swift-crypto (AES-256-GCM,
// HKDF-SHA256, HMAC-SHA256): its own product, so that an app that does not encrypt never builds
// swift-crypto (the engine knows only the protocol).
//
// Test tooling (fuzz targets, benchmarks) lives in nested packages under
// Tests/Fuzz and Benchmarks so that users of the library never build it. Test support
// (_LogStoreTestSupport) and the fuzz entry points (LogStoreFuzzSupport) are targets of this
// package, reaching the engine's internals through `package` access; they are products only when
// LOGSTORE_FUZZ=1 (set by tools/fuzz for the nested fuzz package), so apps never see them.

import PackageDescription

let fuzzing = Context.environment["LOGSTORE_FUZZ"] == "1"
let postgres = Context.environment["LOGSTORE_POSTGRES"] != "0" && !fuzzing

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "LogStore",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "LogStore", targets: ["LogStore"]),
        .library(name: "LogStoreEngine", targets: ["LogStoreEngine"]),
        // Encryption at rest: its own product so that apps that do not encrypt never build swift-crypto.
        .library(name: "LogStoreEncryption", targets: ["LogStoreEncryption"]),
        .executable(name: "logstore-demo", targets: ["logstore-demo"]),
        .executable(name: "logstore-compact", targets: ["logstore-compact"]),
        .executable(name: "logstore-crashtest", targets: ["logstore-crashtest"]),
        // The SQLite backend: its own product so that apps using only LogStore never build GRDB.
        .library(name: "LogStoreSQLite", targets: ["LogStoreSQLite"]),
        .executable(name: "logstore-migrate", targets: ["logstore-migrate"]),
        // The DataStore contract as executable checks, for the test targets of backends (ours and
        // third parties'), with swift-testing or XCTest. Nothing an app depends on pulls it in.
        .library(name: "DataStoreConformance", targets: ["DataStoreConformance"]),
    ]
        + (postgres
            ? [
                // The PostgreSQL backend: its own product so that only apps that use it build NIO.
                .library(name: "LogStorePostgres", targets: ["LogStorePostgres"])
            ] : [])
        + (fuzzing
            ? [
                // For Tests/Fuzz only (LOGSTORE_FUZZ=1): test support and the fuzz entry points. Not API.
                .library(name: "_LogStoreTestSupport", targets: ["_LogStoreTestSupport"]),
                .library(name: "LogStoreFuzzSupport", targets: ["LogStoreFuzzSupport"]),
            ] : []),
    dependencies: [
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
    ]
        + (postgres
            ? [
                .package(url: "https://github.com/vapor/postgres-nio.git", exact: "1.33.2")
            ] : []),
    targets: [
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]
        ),
        // Hardware CRC-32C (SSE4.2, ARMv8 CRC32) behind LogStoreEngine's `CRC32C`.
        .target(name: "CCRC32C"),
        .target(
            name: "LogStoreEngine",
            dependencies: [
                "CLZ4",
                "CCRC32C",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HashTreeCollections", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "LogStore",
            dependencies: [
                "LogStoreEngine",
                .product(name: "HashTreeCollections", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "LogStoreEncryption",
            dependencies: [
                "LogStoreEngine",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "_LogStoreTestSupport",
            dependencies: ["LogStoreEngine", "LogStore", "DataStoreConformance", "LogStoreCommandSupport"],
            swiftSettings: strict
        ),
        .target(
            name: "LogStoreFuzzSupport",
            // LogStoreEncryption: the sealed variants feed random keys and bytes to the decryption paths.
            dependencies: ["LogStoreEngine", "LogStore", "LogStoreSQL", "_LogStoreTestSupport", "LogStoreEncryption"],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "logstore-demo",
            dependencies: ["LogStore"],
            swiftSettings: strict
        ),
        .target(
            name: "LogStoreCommandSupport",
            dependencies: [
                "LogStoreEngine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "LogStoreCompactCommands",
            dependencies: [
                "LogStoreEngine", "LogStoreCommandSupport", "LogStoreEncryption",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "logstore-compact",
            dependencies: ["LogStoreCompactCommands"],
            swiftSettings: strict
        ),
        .target(
            name: "LogStoreSQL",
            dependencies: ["LogStoreEngine", "LogStore"],
            swiftSettings: strict
        ),
        .target(
            name: "LogStoreSQLite",
            dependencies: [
                "LogStoreEngine", "LogStore", "LogStoreSQL",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "LogStoreMigrateCommands",
            dependencies: [
                "LogStore", "LogStoreSQLite", "LogStoreCommandSupport", "LogStoreEncryption",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "logstore-migrate",
            dependencies: ["LogStoreMigrateCommands"] + (postgres ? ["LogStorePostgres"] : []),
            swiftSettings: strict + (postgres ? [.define("LOGSTORE_POSTGRES")] : [])
        ),
        .target(
            name: "DataStoreConformance",
            dependencies: ["LogStore"],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "logstore-crashtest",
            dependencies: [
                "LogStore", "LogStoreEncryption", "_LogStoreTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LogStoreEngineTests",
            dependencies: ["LogStoreEngine", "_LogStoreTestSupport", "LogStoreFuzzSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LogStoreEncryptionTests",
            dependencies: ["LogStoreEncryption", "LogStoreEngine", "LogStore", "DataStoreConformance", "_LogStoreTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LogStoreUsageTests",
            dependencies: ["LogStore"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LogStoreCompactTests",
            dependencies: ["LogStoreCompactCommands", "LogStoreEngine", "LogStoreEncryption", "_LogStoreTestSupport", "logstore-compact"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LogStoreSQLTests",
            dependencies: ["LogStoreSQL", "LogStore", "LogStoreEngine"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LogStoreSQLiteTests",
            dependencies: ["LogStoreSQLite", "LogStore", "DataStoreConformance", "_LogStoreTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LogStoreMigrateTests",
            dependencies: ["LogStoreMigrateCommands", "LogStore", "LogStoreSQLite", "_LogStoreTestSupport", "logstore-migrate"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LogStoreTests",
            dependencies: [
                "LogStore", "_LogStoreTestSupport", "DataStoreConformance",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: strict
        ),
    ]
        + (postgres
            ? [
                .target(
                    name: "LogStorePostgres",
                    dependencies: [
                        "LogStoreEngine", "LogStore", "LogStoreSQL",
                        .product(name: "PostgresNIO", package: "postgres-nio"),
                        .product(name: "Logging", package: "swift-log"),
                    ],
                    swiftSettings: strict
                ),
                // A worker process of the multi-process concurrency test (not a product).
                .executableTarget(
                    name: "logstore-postgres-worker",
                    dependencies: ["LogStorePostgres", "LogStore"],
                    path: "Tests/LogStorePostgresWorker",
                    swiftSettings: strict
                ),
                .testTarget(
                    name: "LogStorePostgresTests",
                    dependencies: [
                        "LogStorePostgres", "LogStore", "LogStoreEngine", "LogStoreSQL", "DataStoreConformance", "_LogStoreTestSupport",
                        "LogStoreMigrateCommands", "logstore-postgres-worker", "logstore-migrate",
                        .product(name: "PostgresNIO", package: "postgres-nio"),
                    ],
                    swiftSettings: strict
                ),
            ] : [])
)
