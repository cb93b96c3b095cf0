// swift-tools-version: 6.1
//
// LogStore's libFuzzer targets (Docs/Fuzzing.md). A nested package so that users of
// the library never build it. Build and run with tools/fuzz TARGET SECONDS (it needs
// `--sanitize=fuzzer` plus `-Xswiftc -sanitize=fuzzer,address`; a plain `swift build` of a fuzz
// target fails to link, because libFuzzer provides its `main`).
//
// Targets (each defines LLVMFuzzerTestOneInput and calls one entry point that replays the same
// way in the root package's FuzzFailCaseTests):
//   fuzz-frame     frame parser, LZ4 payloads, record decoding   FuzzEntryPoints.frames
//                  (mode bit 6: version 4 frames and records)
//   fuzz-record    one format 4 record and its value             FuzzEntryPoints.record
//   fuzz-sealed    sealed records under random keys: opening     FuzzEntryPoints.sealedRecord
//   fuzz-dict      LZ4 with dictionaries, the trainer            FuzzEntryPoints.dictionary
//   fuzz-segment   segment scanner of recovery (strict/salvage)  FuzzEntryPoints.segmentRecovery
//   fuzz-segment4  the same for format 4 segments               FuzzEntryPoints.segmentRecovery4
//   fuzz-value     AttributeValue codec round trips              FuzzEntryPoints.attributeValue
//   fuzz-manifest  MANIFEST reader                               FuzzEntryPoints.manifest
//   fuzz-checkpoint CHECKPOINT reader and loading                FuzzEntryPoints.checkpoint
//   fuzz-run       run files: reader, cursors, validator, writer  FuzzEntryPoints.run
//   fuzz-ops       DataStore scripts vs a model; engine crash scripts   StoreScriptFuzzing.run
//   fuzz-json      LogStore JSON, the SQL backends' row format      FuzzEntryPoints.logStoreJSON
// (all in the root package's LogStoreFuzzSupport module).
// fuzz-corpus-seed (a normal executable) writes the seed corpora in Corpus/.

import PackageDescription

// The root package declares LogStoreFuzzSupport and _LogStoreTestSupport as products only when
// LOGSTORE_FUZZ=1 is set (tools/fuzz sets it), so that apps never see them.
let settings: [SwiftSetting] = [.swiftLanguageMode(.v6)]
let engine = Target.Dependency.product(name: "LogStoreEngine", package: "LogStore")
let fuzzSupport = Target.Dependency.product(name: "LogStoreFuzzSupport", package: "LogStore")

let package = Package(
    name: "LogStoreFuzz",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "LogStore", path: "../..")
    ],
    targets: [
        .executableTarget(name: "fuzz-frame", dependencies: [fuzzSupport], swiftSettings: settings),
        .executableTarget(name: "fuzz-record", dependencies: [fuzzSupport], swiftSettings: settings),
        .executableTarget(name: "fuzz-sealed", dependencies: [fuzzSupport], swiftSettings: settings),
        .executableTarget(name: "fuzz-dict", dependencies: [fuzzSupport], swiftSettings: settings),
        .executableTarget(name: "fuzz-segment", dependencies: [fuzzSupport], swiftSettings: settings),
        .executableTarget(name: "fuzz-segment4", dependencies: [fuzzSupport], swiftSettings: settings),
        .executableTarget(name: "fuzz-value", dependencies: [fuzzSupport], swiftSettings: settings),
        .executableTarget(name: "fuzz-manifest", dependencies: [fuzzSupport], swiftSettings: settings),
        .executableTarget(name: "fuzz-checkpoint", dependencies: [fuzzSupport], swiftSettings: settings),
        .executableTarget(name: "fuzz-run", dependencies: [fuzzSupport], swiftSettings: settings),
        .executableTarget(name: "fuzz-json", dependencies: [fuzzSupport], swiftSettings: settings),
        .executableTarget(
            name: "fuzz-ops",
            dependencies: [fuzzSupport],
            swiftSettings: settings),
        .executableTarget(
            name: "fuzz-corpus-seed",
            dependencies: [
                engine, fuzzSupport, .product(name: "LogStore", package: "LogStore"),
                .product(name: "_LogStoreTestSupport", package: "LogStore"),
            ],
            swiftSettings: settings),
    ]
)
