// libFuzzer target: FuzzEntryPoints.segmentRecovery4 (Docs/Testing.md, "Fuzzing"). No main: libFuzzer's.
import LogStoreFuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        try FuzzEntryPoints.segmentRecovery4(UnsafeRawBufferPointer(start: data, count: size))
    } catch {
        fatalError("fuzz-segment4: \(error)")
    }
    return 0
}
