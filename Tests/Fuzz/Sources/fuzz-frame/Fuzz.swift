// libFuzzer target: FuzzEntryPoints.frames (Docs/Fuzzing.md). No main: libFuzzer's.
import LogStoreFuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        try FuzzEntryPoints.frames(UnsafeRawBufferPointer(start: data, count: size))
    } catch {
        fatalError("fuzz-frame: \(error)")
    }
    return 0
}
