public enum _LogStoreTestsPlaceholder {}
