// libFuzzer target: FuzzEntryPoints.dictionary (Docs/Testing.md, "Fuzzing"). No main: libFuzzer's.
import LogStoreFuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        try FuzzEntryPoints.dictionary(UnsafeRawBufferPointer(start: data, count: size))
    } catch {
        fatalError("fuzz-dict: \(error)")
    }
    return 0
}
