public import Foundation

/// The directory of the package's built products (where the test bundle and the executables
/// are), for tests that run the real binaries (`logstore-compact`, `logstore-migrate`).
public var buildProductsDirectory: URL {
    #if os(macOS)
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            return bundle.bundleURL.deletingLastPathComponent()
        }
        return Bundle.main.bundleURL
    #else
        return Bundle.main.bundleURL
    #endif
}
