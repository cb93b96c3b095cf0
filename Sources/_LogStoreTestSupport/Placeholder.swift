public enum _LogStoreTestSupportPlaceholder {}
