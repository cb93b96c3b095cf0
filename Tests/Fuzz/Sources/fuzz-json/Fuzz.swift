// libFuzzer target: FuzzEntryPoints.logStoreJSON (Docs/Fuzzing.md). No main: libFuzzer's.
import LogStoreFuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        try FuzzEntryPoints.logStoreJSON(UnsafeRawBufferPointer(start: data, count: size))
    } catch {
        fatalError("fuzz-json: \(error)")
    }
    return 0
}
