import DataStoreConformance
import LogStore
import LogStoreEncryption
import Testing

/// The DataStore conformance suite on an encrypted `LogDataStore` on disk: every case a clear
/// store passes, an encrypted one passes the same way. (A child store of an encrypted store runs
/// the same cases on its parent's in-memory state; its sealed spill file is
/// SpillEncryptionTests'.)
@Suite(.serialized)
struct EncryptedConformanceTests {
    static let modes: [LogDataStoreFactory.Mode] = [.disk]

    static func options() -> LogStoreOptions {
        var o = LogStoreOptions()
        // A fixed test key; an app's comes from its Keychain or secrets manager.
        o.encryption = (try? .aes256GCM(key: [UInt8](repeating: 0x5C, count: 32))) ?? .none
        return o
    }

    @Test func theTestKeyIsAccepted() {
        #expect(Self.options().encryption.isEnabled)
    }

    @Test(arguments: DataStoreConformance.cases, modes)
    func conformance(_ check: ConformanceCase, _ mode: LogDataStoreFactory.Mode) async {
        await check.run(on: LogDataStoreFactory(mode, options: Self.options())) { failure in
            Issue.record(
                Comment(rawValue: failure.description),
                sourceLocation: SourceLocation(fileID: failure.fileID, filePath: failure.filePath, line: failure.line, column: 1))
        }
    }
}
