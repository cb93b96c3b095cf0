// libFuzzer target: StoreScriptFuzzing.run (Docs/Fuzzing.md). No main: libFuzzer's.
import LogStoreFuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    do {
        try StoreScriptFuzzing.run(Array(UnsafeBufferPointer(start: data, count: size)))
    } catch {
        fatalError("fuzz-ops: \(error)")
    }
    return 0
}
