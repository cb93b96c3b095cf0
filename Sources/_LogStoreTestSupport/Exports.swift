// The model checker of DataStore scripts (StoreScript, DataStoreModelChecker, ModelViolation)
// lives in DataStoreConformance, where every backend's conformance run uses it; the crash
// scripts, fuzz entry points and property tests here reach it through this module.
@_exported public import DataStoreConformance
