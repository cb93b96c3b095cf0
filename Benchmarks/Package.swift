// swift-tools-version: 6.1
//
// LogStore benchmarks: one runner, `logstore-bench`, that measures LogStore next to SQLite (GRDB),
// LMDB and the disk's own limits in one process, on one disk, and the PostgreSQL backend beside raw
// postgres-nio. A nested package so that users of the library never build GRDB, NIO or link LMDB.
//
//   swift run --manifest-cache none -c release --package-path Benchmarks logstore-bench [--quick] [--json FILE] [--only NAME]
//
// Needs liblmdb-dev and libsqlite3-dev (Benchmarks/setup installs them).

import Foundation
import PackageDescription

/// Engine features that land over time. The runner measures them once they exist, so rerunning
/// the benchmarks after they land stays one command: the manifest looks for the public API in the
/// root package's engine sources and sets a compilation condition. SwiftPM caches a manifest's
/// result by the manifest's own text, so run with `--manifest-cache none` (as the documented
/// command does) for the check to see new engine sources; or pass `-Xswiftc -DLOGSTORE_HAS_COMPACT`.
///   LOGSTORE_HAS_COMPACT     `public func compact(` (LogEngine.compact(): compaction workload)
///   LOGSTORE_HAS_CHECKPOINT  `public func checkpoint(` (LogEngine.checkpoint(): open-from-checkpoint)
func engineSourcesContain(_ needle: String) -> Bool {
    let root = URL(fileURLWithPath: Context.packageDirectory)
        .deletingLastPathComponent()
        .appendingPathComponent("Sources/LogStoreEngine")
    guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { return false }
    for case let url as URL in walker where url.pathExtension == "swift" {
        if let text = try? String(contentsOf: url, encoding: .utf8), text.contains(needle) { return true }
    }
    return false
}

var features: [SwiftSetting] = []
if engineSourcesContain("public func compact(") { features.append(.define("LOGSTORE_HAS_COMPACT")) }
if engineSourcesContain("public func checkpoint(") { features.append(.define("LOGSTORE_HAS_CHECKPOINT")) }

let package = Package(
    name: "LogStoreBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "LogStore", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift.git", exact: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", exact: "1.33.2"),
        // Fluent models, the peer a server-side Swift user picks for models on PostgreSQL
        // (FluentKit and its PostgreSQL driver, without Vapor: the models, not the web glue).
        .package(url: "https://github.com/vapor/fluent-kit.git", exact: "1.57.0"),
        .package(url: "https://github.com/vapor/fluent-postgres-driver.git", exact: "2.14.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
    ],
    targets: [
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        // glibc's <malloc.h> (mallinfo2) for the memory workload; header only.
        .systemLibrary(name: "CMallocInfo"),
        .executableTarget(
            name: "logstore-bench",
            dependencies: [
                "CLMDB",
                "CMallocInfo",
                .product(name: "LogStore", package: "LogStore"),
                .product(name: "LogStoreEngine", package: "LogStore"),
                .product(name: "LogStoreSQLite", package: "LogStore"),
                // The encryption workload's encrypted stores (AES-256-GCM).
                .product(name: "LogStoreEncryption", package: "LogStore"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "LogStorePostgres", package: "LogStore"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "FluentKit", package: "fluent-kit"),
                .product(name: "FluentPostgresDriver", package: "fluent-postgres-driver"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)] + features
        ),
        // A fixed DataStore workload for callgrind instruction counts (Performance.md).
        .executableTarget(
            name: "logstore-probe",
            dependencies: [.product(name: "LogStore", package: "LogStore")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Per-record AEAD cost of encryption at rest (LogStoreEncryption against swift-crypto's
        // API used with Data): `logstore-aead-bench [reps] [variant|all] [size]`.
        .executableTarget(
            name: "logstore-aead-bench",
            dependencies: [
                .product(name: "LogStoreEncryption", package: "LogStore"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
