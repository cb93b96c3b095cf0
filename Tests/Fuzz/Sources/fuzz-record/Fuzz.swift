// libFuzzer target: FuzzEntryPoints.record (Docs/Testing.md, "Fuzzing"). No main: libFuzzer's.
import LogStoreFuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        try FuzzEntryPoints.record(UnsafeRawBufferPointer(start: data, count: size))
    } catch {
        fatalError("fuzz-record: \(error)")
    }
    return 0
}
