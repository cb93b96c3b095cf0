// swift-tools-version: 6.2
//
// A small Hummingbird service whose handlers use the DataStore API, on LogStore or on PostgreSQL
// with one setting (the STORE environment variable). A nested package, so that the library's
// users never build Hummingbird; it depends on the root package by path.
//
//   swift run --package-path tools/example-service                                  # LogStore in ./example.store
//   STORE="postgres://me@localhost/shop?sslmode=disable" swift run --package-path tools/example-service
//
// README.md in this directory has the requests to try.

import PackageDescription

let package = Package(
    name: "LogStoreExampleService",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "LogStore", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", exact: "2.28.1"),
    ],
    targets: [
        .executableTarget(
            name: "logstore-example-service",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "LogStore", package: "LogStore"),
                .product(name: "LogStorePostgres", package: "LogStore"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
