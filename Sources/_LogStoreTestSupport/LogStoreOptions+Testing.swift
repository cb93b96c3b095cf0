public import LogStoreEngine

extension LogStoreOptions {
    /// Options for tests of replay and recovery: no checkpoint on close and no background
    /// compaction, so every open replays the whole log and sees every byte a test damaged.
    public static var replayOnly: LogStoreOptions {
        var o = LogStoreOptions()
        o.checkpointOnClose = false
        o.autoCompaction = false
        return o
    }
}
