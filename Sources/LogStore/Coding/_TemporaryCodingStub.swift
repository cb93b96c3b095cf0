// TEMPORARY: replaced by the real AttributeEncoder/AttributeDecoder (coding branch).
import Foundation
public import LogStoreEngine

public struct AttributeEncoder: Sendable {
    public init() {}
    public func encode<T: Encodable>(_ value: T) throws -> AttributeValue {
        let data = try JSONEncoder().encode([value])
        let obj = try JSONSerialization.jsonObject(with: data)
        guard let arr = obj as? [Any], let first = arr.first else { throw LogStoreError(.encodingFailed, "stub") }
        return Self.convert(first)
    }
    static func convert(_ o: Any) -> AttributeValue {
        switch o {
        case let s as String: return .string(s)
        case let n as NSNumber:
            if String(cString: n.objCType) == "c" || type(of: n) == type(of: NSNumber(value: true)) { return .bool(n.boolValue) }
            if let i = Int64(exactly: n.doubleValue), !"\(n)".contains(".") { return .int(i) }
            return .double(n.doubleValue)
        case let a as [Any]: return .array(a.map(convert))
        case let d as [String: Any]: return .map(d.mapValues(convert))
        default: return .null
        }
    }
}
public struct AttributeDecoder: Sendable {
    public init() {}
    public func decode<T: Decodable>(_ type: T.Type, from value: AttributeValue) throws -> T {
        let data = try JSONSerialization.data(withJSONObject: [Self.convert(value)])
        return try JSONDecoder().decode([T].self, from: data)[0]
    }
    static func convert(_ v: AttributeValue) -> Any {
        switch v {
        case .null: return NSNull()
        case .bool(let b): return b
        case .int(let i): return i
        case .double(let d): return d
        case .string(let s): return s
        case .array(let a): return a.map(convert)
        case .map(let m): return m.mapValues(convert)
        default: return NSNull()
        }
    }
}
enum _AttributeCoding {
    static func encodeBytes<T: Encodable>(_ value: T) throws -> [UInt8] { try AttributeEncoder().encode(value).encoded() }
    static func decode<T: Decodable>(_ type: T.Type, fromBytes bytes: ArraySlice<UInt8>) throws -> T {
        try AttributeDecoder().decode(type, from: try AttributeValue.decode(Array(bytes)))
    }
}
