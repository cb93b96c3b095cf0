// libFuzzer target: FuzzEntryPoints.checkpoint (Docs/Fuzzing.md). No main: libFuzzer's.
import LogStoreFuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        try FuzzEntryPoints.checkpoint(UnsafeRawBufferPointer(start: data, count: size))
    } catch {
        fatalError("fuzz-checkpoint: \(error)")
    }
    return 0
}
