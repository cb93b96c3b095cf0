import LogStore
import LogStoreEngine
import _LogStoreTestSupport

/// The `fuzz-ops` target's entry point: runs a script parsed from fuzzer bytes.
public enum StoreScriptFuzzing {
    /// Input: `mode:u8 script`. Mode bit 0 clear: a DataStore script (``StoreScript/parse(_:)``)
    /// on an in-memory `LogDataStore` (bit 1 set: child stores spill to a file after 64 bytes);
    /// bit 0 set: an engine crash script (``EngineCrashScript/parse(_:)``) on a
    /// ``FaultInjectingFileSystem`` (bit 1 set: LZ4 compression on). Throws ``ModelViolation``
    /// or ``CrashOracleViolation`` when the store breaks a promise.
    public static func run(_ data: [UInt8]) throws {
        guard let mode = data.first else { return }
        let script = Array(data.dropFirst())
        if mode & 1 == 0 {
            var options = LogStoreOptions()
            if mode & 2 != 0 { options.childSpillThreshold = 64 }
            let factory = LogDataStoreFactory(.memory, options: options)
            let location = try factory.makeLocation()
            defer { location.destroy() }
            let checker = try DataStoreModelChecker(location: location, capabilities: factory.capabilities)
            defer { checker.finish() }
            try checker.run(StoreScript.parse(script))
        } else {
            var options = LogEngineOptions()
            options.segmentSize = 64 << 10
            options.compression = mode & 2 != 0
            let checker = try EngineCrashScriptChecker(options: options)
            defer { checker.finish() }
            try checker.run(EngineCrashScript.parse(script))
        }
    }
}
