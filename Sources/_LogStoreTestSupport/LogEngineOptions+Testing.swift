public import LogStoreEngine

extension LogEngineOptions {
    /// Options for tests of replay and recovery: no checkpoint on close and no background
    /// compaction or recompression, so every open replays the whole log and sees every byte a test damaged; and no
    /// preallocation, so a segment file ends where its log does (tests find frames by file size;
    /// preallocated tails have their own tests).
    public static var replayOnly: LogEngineOptions {
        var o = LogEngineOptions()
        o.checkpointOnClose = false
        o.autoCompaction = false
        o.autoRecompression = false
        o.preallocationSize = 0
        return o
    }
}
