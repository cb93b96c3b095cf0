// Per-record AEAD cost of encryption at rest: LogStoreEncryption's AEADKey (what the engine calls
// for each sealed record) next to swift-crypto's API used with `Data` values, plus the per-epoch
// HKDF and the key check's HMAC. Thread CPU time per call, the best of `rounds` rounds:
//
//   swift build -c release --package-path Benchmarks --product logstore-aead-bench
//   Benchmarks/.build/release/logstore-aead-bench [reps] [variant|all] [size]
//
// Instruction counts (stable on a busy machine): callgrind at two rep counts, the difference over
// the extra reps (strip debug info first: valgrind 3.19 cannot read the binary's):
//
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null BIN 2000 key-open 200    (and 12000)
import Crypto
import Foundation
import LogStoreEncryption

#if canImport(Glibc)
    import Glibc
#endif

func cpuNow() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return Double(t.tv_sec) * 1e9 + Double(t.tv_nsec)
}

let arguments = CommandLine.arguments
let reps = arguments.count > 1 ? Int(arguments[1]) ?? 200_000 : 200_000
let only = arguments.count > 2 ? arguments[2] : "all"
let sizes = arguments.count > 3 ? [Int(arguments[3]) ?? 200] : [200, 2000]
let rounds = only == "all" ? 3 : 1

let storeKey = [UInt8](repeating: 7, count: 32)
let salt = [UInt8](repeating: 1, count: 16)
let info = Array("bench".utf8)
let cipher = try AESGCMCipher(key: storeKey)
let aeadKey = try cipher.deriveKey(salt: salt, info: info)
// The same subkey as a SymmetricKey, for the variants that call swift-crypto directly.
let symmetricKey = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: storeKey), salt: salt, info: info, outputByteCount: 32)
let subkeyBytes = symmetricKey.withUnsafeBytes { Array($0) }
// A record's AAD: "LS4R", a store id, op, form, epoch, counter.
let aad: [UInt8] = Array("LS4R".utf8) + [UInt8](repeating: 3, count: 16) + [0x01, 0x10, 0x01, 0x05]

nonisolated(unsafe) var sink = 0

func run(_ name: String, size: Int, _ body: (Int) throws -> Void) rethrows {
    guard only == "all" || only == name else { return }
    var best = Double.infinity
    for _ in 0..<rounds {
        let t0 = cpuNow()
        for i in 0..<reps { try body(i) }
        best = min(best, (cpuNow() - t0) / Double(reps))
    }
    print("\(name.padding(toLength: 16, withPad: " ", startingAt: 0)) \(size) B: \(Int(best.rounded())) ns")
}

func sealWithKey(_ plain: [UInt8], _ counter: UInt64) throws -> [UInt8] {
    var out = [UInt8](repeating: 0, count: plain.count + 16)
    try out.withUnsafeMutableBytes { o in
        try plain.withUnsafeBytes { p in try aad.withUnsafeBytes { a in try aeadKey.seal(p, nonce: AEADNonce(counter), aad: a, into: o) } }
    }
    return out
}

for size in sizes {
    let plain = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    let sealed = try (0..<1024).map { try sealWithKey(plain, UInt64($0)) }
    var out = [UInt8](repeating: 0, count: size + 16)
    var back = [UInt8](repeating: 0, count: size)

    // The engine's path.
    try run("key-seal", size: size) { i in
        try out.withUnsafeMutableBytes { o in
            try plain.withUnsafeBytes { p in
                try aad.withUnsafeBytes { a in try aeadKey.seal(p, nonce: AEADNonce(UInt64(i)), aad: a, into: o) }
            }
        }
        sink &+= Int(out[0])
    }
    try run("key-open", size: size) { i in
        let s = sealed[i & 1023]
        let ok = try back.withUnsafeMutableBytes { o in
            try s.withUnsafeBytes { p in
                try aad.withUnsafeBytes { a in try aeadKey.open(p, nonce: AEADNonce(UInt64(i & 1023)), aad: a, into: o) }
            }
        }
        sink &+= ok ? Int(back[0]) : -1
    }

    // swift-crypto's API with Data values and SealedBox(nonce:ciphertext:tag:).
    let plainData = Data(plain)
    let aadData = Data(aad)
    try run("data-seal", size: size) { i in
        let box = try AES.GCM.seal(
            plainData, using: symmetricKey, nonce: try AES.GCM.Nonce(data: AEADNonce(UInt64(i)).bytes), authenticating: aadData)
        sink &+= (box.ciphertext + box.tag).count
    }
    let sealedData = sealed.map { Data($0) }
    try run("data-open", size: size) { i in
        let b = sealedData[i & 1023]
        let box = try AES.GCM.SealedBox(
            nonce: try AES.GCM.Nonce(data: AEADNonce(UInt64(i & 1023)).bytes), ciphertext: b.prefix(b.count - 16), tag: b.suffix(16))
        sink &+= try AES.GCM.open(box, using: symmetricKey, authenticating: aadData).count
    }
    // A SymmetricKey made from the subkey's bytes for every call, against reusing one.
    try run("new-key-open", size: size) { i in
        let b = sealedData[i & 1023]
        let box = try AES.GCM.SealedBox(
            nonce: try AES.GCM.Nonce(data: AEADNonce(UInt64(i & 1023)).bytes), ciphertext: b.prefix(b.count - 16), tag: b.suffix(16))
        sink &+= try AES.GCM.open(box, using: SymmetricKey(data: subkeyBytes), authenticating: aadData).count
    }
}

// Once per key epoch, run file or checkpoint; once per open.
try run("hkdf-derive", size: 32) { i in
    _ = try cipher.deriveKey(salt: [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 16), info: Array("LogStore 4 records".utf8))
}
try run("hmac-key-check", size: 16) { i in
    sink &+= Int(try cipher.mac(salt: [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 16), info: info, message: [1, 2, 3])[0])
}
if sink == 42 { print("") }
