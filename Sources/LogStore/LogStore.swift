@_exported public import enum LogStoreEngine.AttributeValue
@_exported public import struct LogStoreEngine.BackupProgress
@_exported public import struct LogStoreEngine.BackupReport
@_exported public import enum LogStoreEngine.BackupVerification
@_exported public import enum LogStoreEngine.Durability
@_exported public import struct LogStoreEngine.LogEngineOptions
// `import LogStore` is all a user needs: the engine types that appear in the DataStore API are
// re-exported here.
@_exported public import struct LogStoreEngine.LogStoreError
@_exported public import struct LogStoreEngine.RecordKey
@_exported public import struct LogStoreEngine.RecordLimits
@_exported public import enum LogStoreEngine.RecoveryMode
@_exported public import struct LogStoreEngine.RecoveryReport
@_exported public import struct LogStoreEngine.StoreEncryption
@_exported public import enum LogStoreEngine.StoreHistory
@_exported public import struct LogStoreEngine.SystemError
