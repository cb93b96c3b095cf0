public enum _CompactPlaceholder {}
