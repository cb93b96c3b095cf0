// libFuzzer target: FuzzEntryPoints.manifest (Docs/Fuzzing.md). No main: libFuzzer's.
import LogStoreFuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        try FuzzEntryPoints.manifest(UnsafeRawBufferPointer(start: data, count: size))
    } catch {
        fatalError("fuzz-manifest: \(error)")
    }
    return 0
}
