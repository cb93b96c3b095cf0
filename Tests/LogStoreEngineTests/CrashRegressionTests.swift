import XCTest
import LogStoreEngine
import _LogStoreTestSupport

/// Engine bugs found by the power-loss harness (PowerLossTests), each pinned by the smallest
/// scenario that showed it.
final class CrashRegressionTests: XCTestCase {
    let marker = RecordKey([1])

    func commitMarker(_ e: LogEngine) throws {
        try e.commit([.put(type: "T", key: marker, value: [42])])
    }

    /// Opens the store on every power-loss image of `fs` for a range of seeds and checks that the
    /// committed marker is there.
    func assertMarkerSurvivesPowerLoss(_ fs: FaultInjectingFileSystem, directory: String,
                                       file: StaticString = #filePath, line: UInt = #line) throws {
        for seed in 0..<48 as Range<UInt64> {
            let image = fs.powerLossImage(seed: seed)
            let e = try LogEngine.open(directory: directory, fileSystem: image)
            XCTAssertEqual(try e.snapshot().value(type: "T", key: marker).map(Array.init), [42], "seed \(seed)", file: file, line: line)
            try e.close()
        }
    }

    /// `LogEngine.open` created the store directory but never fsynced its parent, so a power loss
    /// after acknowledged commits could take the whole store directory away.
    func testStoreDirectoryCreatedByOpenSurvivesPowerLoss() throws {
        let fs = FaultInjectingFileSystem()
        try fs.createDirectory(atPath: "/data")
        try fs.syncDirectory(atPath: "/")
        let e = try LogEngine.open(directory: "/data/a/store", fileSystem: fs)
        try commitMarker(e)
        try e.close()
        try assertMarkerSurvivesPowerLoss(fs, directory: "/data/a/store")
    }
}
