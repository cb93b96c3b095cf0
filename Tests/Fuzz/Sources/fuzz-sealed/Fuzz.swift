// libFuzzer target: FuzzEntryPoints.sealedRecord (Docs/Testing.md, "Fuzzing"). No main: libFuzzer's.
import LogStoreFuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        try FuzzEntryPoints.sealedRecord(UnsafeRawBufferPointer(start: data, count: size))
    } catch {
        fatalError("fuzz-sealed: \(error)")
    }
    return 0
}
