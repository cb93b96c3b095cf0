// libFuzzer target: FuzzEntryPoints.attributeValue (Docs/Fuzzing.md). No main: libFuzzer's.
import LogStoreFuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        try FuzzEntryPoints.attributeValue(UnsafeRawBufferPointer(start: data, count: size))
    } catch {
        fatalError("fuzz-value: \(error)")
    }
    return 0
}
