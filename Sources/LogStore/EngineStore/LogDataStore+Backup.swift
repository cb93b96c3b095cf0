public import Foundation
public import LogStoreEngine

extension LogDataStore {
    /// Copies a consistent snapshot of the store into the directory `url` while readers and
    /// writers go on, and verifies it (see the "Backup and Restore" article). The backup holds
    /// every commit that returned before the call, none that started after it; it is a store:
    /// restore by opening it (`LogDataStore(directory: url)`), or with
    /// `logstore-compact restore`.
    ///
    /// `url` must be missing, an empty directory, or an earlier backup of this store (then only
    /// the segment files it lacks are copied: an incremental backup). A store in memory is backed
    /// up to disk the same way.
    ///
    /// Runs on the calling thread and blocks until the backup is synced and verified; `progress`
    /// is called on that thread. Throws `.notOpen`; `.reentrantWrite` inside a write block of this store; `.invalidArgument` for
    /// a destination that is not empty and not a backup of this store, or inside the store;
    /// `.locked` when the destination is open; I/O errors and `.diskFull` (the store is never
    /// changed; the destination never opens as a backup it is not); `.corruption` when the copy
    /// does not verify.
    @discardableResult
    public func backup(
        to url: URL, verification: BackupVerification = .readBack,
        progress: ((BackupProgress) -> Void)? = nil
    ) throws -> BackupReport {
        let (engine, fs) = try backupSource()
        return try engine.backup(to: url.path, fileSystem: fs, verification: verification, progress: progress)
    }

    /// ``backup(to:verification:progress:)`` for Swift concurrency: runs off the caller's executor
    /// (on a Dispatch global queue thread, where `progress` is called too).
    @discardableResult
    public func backup(
        to url: URL, verification: BackupVerification = .readBack,
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) async throws -> BackupReport {
        let (engine, fs) = try backupSource()
        return try await withCheckedThrowingContinuation { (cont: CheckedContinuation<BackupReport, any Error>) in
            DispatchQueue.global().async {
                cont.resume(
                    with: Result { try engine.backup(to: url.path, fileSystem: fs, verification: verification, progress: progress) })
            }
        }
    }

    /// The engine to back up and the file system the backup goes to: the real one for stores in
    /// a directory or in memory, the store's own for a store on a custom file system.
    func backupSource() throws -> (LogEngine, any FileSystem) {
        let engine = try shell.currentBackend().engine
        if engine.isWritingOnCurrentThread { throw StoreErrors.reentrantWrite("backup(to:)") }
        return (engine, backupFileSystem)
    }
}
