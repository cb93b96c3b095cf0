// libFuzzer target: FuzzEntryPoints.segmentRecovery (Docs/Fuzzing.md). No main: libFuzzer's.
import LogStoreFuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        try FuzzEntryPoints.segmentRecovery(UnsafeRawBufferPointer(start: data, count: size))
    } catch {
        fatalError("fuzz-segment: \(error)")
    }
    return 0
}
